#!/bin/sh
# The answer must be what db wrote into the shared volume (main sees it too).
mkdir -p /logs/verifier
if [ -s /work/answer.txt ] && [ "$(cat /work/answer.txt)" = "$(cat "$SECRET_FILE")" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
