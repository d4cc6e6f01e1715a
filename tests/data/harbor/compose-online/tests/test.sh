#!/bin/sh
# The pod's own sidecar answered the agent (not another attempt's).
want=$(wget -q -O- http://web:8080/id)
if [ -n "$want" ] && [ "$(cat /work/answer.txt 2>/dev/null)" = "$want" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
