#!/bin/sh
# Compares without printing: the token is a secret.
token=$(wget -q -O- http://vault:8000/token)
if [ -n "$token" ] && [ "$token" = "$API_KEY" ] && [ "$TASK_KEY" = "$API_KEY" ] &&
   [ "$SOLUTION_KEY" = "$API_KEY" ] && [ "$LITERAL" = 'cost $5 none' ]; then
  echo match > /work/result.txt
else
  echo differ > /work/result.txt
fi
