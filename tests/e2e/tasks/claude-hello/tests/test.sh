#!/bin/sh
# Harbor's verifier contract: the reward goes to /logs/verifier/reward.txt.
mkdir -p /logs/verifier
if [ "$(cat /work/hello.txt 2>/dev/null)" = "forge" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
