#!/bin/sh
# The image is what BuildKit made of the Dockerfile: both files copied, the
# mounted step's output there.
if [ "$(cat /app/answer.txt 2>/dev/null)" = "$(printf 'hello\nworld')" ] && [ "$(cat /app/mounted.txt)" = hello ]; then
  echo 1
else
  echo 0
fi > /logs/verifier/reward.txt
