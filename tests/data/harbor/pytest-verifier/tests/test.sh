#!/bin/bash
# As real Harbor test scripts do: install uv, put it on PATH, run pytest from
# the task's working directory. There is no network here, so the installer
# is a copy of its logic that takes its binary from /tests.
sh /tests/install-uv.sh || exit 1
source "$HOME/.local/bin/env"
uv --version >/dev/null || exit 1
cd /app
python3 -m pytest /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
