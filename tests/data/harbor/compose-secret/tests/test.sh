#!/bin/sh
# The verifier's own copy of the secret (verifier.env) reaches it too.
if [ "$(cat /work/result.txt 2>/dev/null)" = match ] && [ -n "$VERIFIER_KEY" ] && [ "$VERIFIER_KEY" = "$TASK_KEY" ]; then
  echo 1
else
  echo 0
fi > /logs/verifier/reward.txt
