#!/usr/bin/env bash
# forge-verify report and solvable on verdict records (no sandboxes needed):
# values, JSON and table output, k > n refused with the task named, a bad
# line reported as file:line, solvable flags and exit statuses.
set -euo pipefail
: "${FORGE_BIN:?}"
verify="$FORGE_BIN/forge-verify"
work="$(mktemp -d)"
trap '[[ -n "${KEEP_WORK:-}" ]] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

v() {  # task harness outcome [reward]
  printf '{"schema":"forge.verdict/1","rollout_id":"%s-%s-%s","task_id":"%s","harness":"%s","verdict":{"outcome":"%s","reward":%s}}\n' \
    "$1" "$2" "$RANDOM$RANDOM" "$1" "$2" "$3" "${4:-null}"
}
{
  # t-a: 5 valid trials, 2 passed, plus one infra error (excluded).
  v t-a model passed 1; v t-a model passed 1; v t-a model failed 0; v t-a model failed 0
  v t-a model agent_timeout; v t-a model infra_error
  # t-b: 5 of 5 passed.
  for _ in 1 2 3 4 5; do v t-b model passed 1; done
} >"$work/verdicts.jsonl"

"$verify" report -k 1,2,5 --json "$work/verdicts.jsonl" >"$work/r.json"
jq -e '.tasks[0].task_id == "t-a" and .tasks[0].valid == 5 and .tasks[0].excluded == 1' "$work/r.json" >/dev/null ||
  fail "t-a counts"
# Hand-computed: pass@2 = 1 - C(3,2)/C(5,2) = 0.7; pass^2 = C(2,2)/C(5,2) = 0.1; pass@5 = 1; pass^5 = 0.
jq -e '(.tasks[0].pass_at_k["2"] - 0.7 | fabs) < 1e-12 and (.tasks[0].pass_hat_k["2"] - 0.1 | fabs) < 1e-12' \
  "$work/r.json" >/dev/null || fail "t-a pass@2 / pass^2"
jq -e '.tasks[0].pass_at_k["5"] == 1 and .tasks[0].pass_hat_k["5"] == 0' "$work/r.json" >/dev/null || fail "k = n"
jq -e '.tasks[1].pass_hat_k["5"] == 1 and .overall.excluded == 1 and .overall.valid == 10' "$work/r.json" >/dev/null ||
  fail "t-b and overall"
jq -e '(.overall.pass_at_k["1"] - 0.7 | fabs) < 1e-12' "$work/r.json" >/dev/null || fail "overall pass@1 = mean(0.4, 1)"
"$verify" report -k 1 --table "$work/verdicts.jsonl" | grep -q '^t-a .* 0.4000 ' || fail "table row"

set +e
"$verify" report -k 6 "$work/verdicts.jsonl" >/dev/null 2>"$work/err"; rc=$?
set -e
[[ $rc -eq 65 ]] || fail "k > n exit $rc"
grep -q 'k=6 is larger than the valid trials of 2 task(s): t-a (5 valid), t-b (5 valid)' "$work/err" || fail "refusal text: $(cat "$work/err")"

# A bad line is reported with its place; the report of the rest is still printed; exit 65.
cp "$work/verdicts.jsonl" "$work/bad.jsonl"
echo '{"task_id":"t-a"}' >>"$work/bad.jsonl"
set +e
"$verify" report -k 1 --json "$work/bad.jsonl" >"$work/bad.out" 2>"$work/err"; rc=$?
set -e
[[ $rc -eq 65 ]] || fail "bad record exit $rc"
grep -q 'bad.jsonl:12: verdict: missing' "$work/err" || fail "bad record not named"
jq -e '.overall.valid == 10' "$work/bad.out" >/dev/null || fail "report of the good records lost"

# solvable: oracle fails t-a (broken), nop passes t-b (trivial), models decide the rest.
{
  cat "$work/verdicts.jsonl"
  v t-a oracle failed 0; v t-a nop failed 0
  v t-b oracle passed 1; v t-b nop passed 1
} >"$work/all.jsonl"
set +e
"$verify" solvable -k 2 --json "$work/all.jsonl" >"$work/s.jsonl"; rc=$?
set -e
[[ $rc -eq 1 ]] || fail "solvable with defects exit $rc"
jq -se 'map(select(.task_id == "t-a"))[0].flags == ["broken_environment"]' "$work/s.jsonl" >/dev/null || fail "t-a flags"
jq -se 'map(select(.task_id == "t-b"))[0].flags == ["trivial", "saturated"]' "$work/s.jsonl" >/dev/null || fail "t-b flags"
{ v t-c oracle passed 1; v t-c nop failed 0; v t-c model failed 0; v t-c model failed 0; } >"$work/clean.jsonl"
"$verify" solvable -k 2 --json "$work/clean.jsonl" >"$work/c.jsonl" || fail "a task without defects exits non-zero"
jq -e '.flags == ["unsolved"]' "$work/c.jsonl" >/dev/null || fail "unsolved flag"

echo "verify_report: ok"
