#!/bin/sh
# Harbor's verifier contract: write the reward to /logs/verifier/reward.txt.
# POSIX sh, not bash: the example image is busybox.
mkdir -p /logs/verifier
if [ -f /work/hello.txt ] && [ "$(cat /work/hello.txt)" = "hello" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
