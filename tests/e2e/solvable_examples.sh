#!/usr/bin/env bash
# The task-construction check on the shipped example tasks: the oracle harness
# (the task's solution/solve.sh, copied into the sandbox) passes every task,
# the no-op harness passes none, and forge-verify solvable raises no flag.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null
store=$WORK/forge.db
run="solvable-$$"
trap 'rm -rf "$WORK"; "$FORGE_BIN/forge-launch" --backend docker gc --run-id "$run-oracle" >/dev/null 2>&1; "$FORGE_BIN/forge-launch" --backend docker gc --run-id "$run-nop" >/dev/null 2>&1' EXIT

for harness in oracle nop; do
  "$FORGE_BIN/forge-launch" --store "$store" --backend docker --harness $harness --run-id "$run-$harness" \
    --hold "$FORGE_SRC/examples/tasks.jsonl" 2>"$ERR" >"$WORK/$harness.rollouts" \
    || fail "forge-launch --harness $harness: $(tail -5 "$ERR")"
  "$FORGE_BIN/forge-verify" run --store "$store" --tasks "$FORGE_SRC/examples/tasks.jsonl" \
    <"$WORK/$harness.rollouts" >"$WORK/$harness.verdicts" 2>"$ERR"
  echo "$?" >"$WORK/$harness.status"
done
[ "$(cat "$WORK/oracle.status")" -eq 0 ] && pass || fail "oracle verdicts not all passed: $(cat "$WORK/oracle.verdicts")"
[ "$(jq -r .verdict.outcome "$WORK/oracle.verdicts" | sort | uniq -c | tr -s ' ')" = " 2 passed" ] && pass \
  || fail "oracle: $(jq -c .verdict "$WORK/oracle.verdicts")"
[ "$(cat "$WORK/nop.status")" -eq 1 ] && pass || fail "nop verdicts should be negative (exit 1)"
[ "$(jq -r .verdict.outcome "$WORK/nop.verdicts" | sort | uniq -c | tr -s ' ')" = " 2 failed" ] && pass \
  || fail "nop: $(jq -c .verdict "$WORK/nop.verdicts")"
cat "$WORK/oracle.verdicts" "$WORK/nop.verdicts" >"$WORK/all.verdicts"
expect_exit 0 "solvable on healthy tasks" "$FORGE_BIN/forge-verify" solvable --json -k 1 "$WORK/all.verdicts"
grep -q "broken_environment\|\"trivial\"" "$OUT" && fail "unexpected flags: $(cat "$OUT")" || pass
# A nop run that passes makes a task trivial, exit 1.
jq -c 'if .task_id == "hello-file" then .verdict.outcome = "passed" | .verdict.passed = true | .verdict.reward = 1 else . end' \
  "$WORK/nop.verdicts" >"$WORK/trivial.verdicts"
cat "$WORK/oracle.verdicts" >>"$WORK/trivial.verdicts"
expect_exit 1 "solvable with a trivial task" "$FORGE_BIN/forge-verify" solvable --json -k 1 "$WORK/trivial.verdicts"
grep -q "trivial" "$OUT" && pass || fail "hello-file not flagged trivial: $(cat "$OUT")"
finish
