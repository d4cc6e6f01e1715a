#!/bin/sh
if [ "$(cat /work/answer.txt 2>/dev/null)" = shared ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
