#!/bin/sh
# Reward 1 only when the answer is right and the user was asked for it.
mkdir -p /logs/verifier
transcript=$(wget -q -O - http://user-server:8000/cgi-bin/chat)
if [ "$(cat /work/answer.txt 2>/dev/null)" = teal ] && echo "$transcript" | grep -q 'user: My favorite color is teal'; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
