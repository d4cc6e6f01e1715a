#!/bin/sh
if [ "$(cat /work/answer.txt 2>/dev/null)" = 42 ]; then r=1; else r=0; fi
echo "{\"reward\": $r, \"style\": 0.5}" > /logs/verifier/reward.json
