#!/bin/sh
# Harbor's verifier contract: write the reward to /logs/verifier/reward.txt.
# POSIX sh, not bash: the example image is busybox.
mkdir -p /logs/verifier
if [ -f /work/sum.txt ] && [ "$(tr -d ' \t\r\n' < /work/sum.txt)" = "5050" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
