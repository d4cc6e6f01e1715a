#!/bin/sh
mkdir -p /logs/verifier
if [ "$(cat /work/answer.txt 2>/dev/null)" = skill-word-5512 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
