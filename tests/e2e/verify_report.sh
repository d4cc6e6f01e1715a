#!/usr/bin/env bash
# forge-verify report and solvable on verdict records (no sandboxes needed):
# values, JSON and table output, k > n refused with the task named, a bad
# line reported as file:line, solvable flags and exit statuses; and issue
# 58's defects through the CLI: duplicates folded on every path, an unknown
# outcome counted (not refused), tampered trials as failures with reward 0 in
# old and new verdicts, compare's A and B over the tasks both ran.
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

# Issue 58: every path says how many duplicates were folded (11 records read twice).
cat "$work/verdicts.jsonl" "$work/verdicts.jsonl" >"$work/twice.jsonl"
"$verify" run --store "$work/empty.db" </dev/null || fail "making an empty store"
for flags in "" "--by harness" "--html $work/twice.html" "--store $work/empty.db" "--by harness --html $work/by.html"; do
  # shellcheck disable=SC2086 # the flags are words
  "$verify" report -k 1 --json $flags "$work/twice.jsonl" >"$work/twice.json" 2>"$work/err" || fail "report $flags"
  jq -e '.overall.duplicates_folded == 11' "$work/twice.json" >/dev/null ||
    fail "report $flags: duplicates_folded $(jq .overall.duplicates_folded "$work/twice.json")"
  grep -q '11 duplicate verdict(s) folded' "$work/err" || fail "report $flags: no folding note on stderr"
done
jq -e '.groups[0].overall.duplicates_folded == 11 and .overall.valid == 10' "$work/twice.json" >/dev/null ||
  fail "--by: the group's own duplicates_folded"
grep -q '11 duplicate verdict(s) folded' "$work/by.html" || fail "the page does not say how many were folded"

# An outcome this forge does not know: counted as a failed trial, reward 0, exit 0, named on stderr.
{ v t-c model passed 1; v t-c model quarantined 1; } >"$work/newer.jsonl"
"$verify" report -k 1,2 --json "$work/newer.jsonl" >"$work/newer.json" 2>"$work/err" || fail "unknown outcome: exit $?"
# n = 2, c = 1: pass@1 0.5, pass@2 1, mean reward (1 + 0) / 2.
jq -e '.tasks[0].valid == 2 and .tasks[0].passed == 1 and .tasks[0].pass_at_k["1"] == 0.5 and
       .tasks[0].pass_at_k["2"] == 1 and .tasks[0].mean_reward == 0.5 and .tasks[0].outcomes.quarantined == 1 and
       .overall.unknown_outcomes == 1' "$work/newer.json" >/dev/null || fail "unknown outcome counts: $(cat "$work/newer.json")"
grep -q 'outcome "quarantined", which this forge does not know: counted as failed trials with reward 0' "$work/err" ||
  fail "unknown outcome not named: $(cat "$work/err")"
"$verify" report -k 1 --table "$work/newer.jsonl" 2>/dev/null | grep -q 'quarantined): counted as failed trials, reward 0' ||
  fail "the table does not say how the unknown outcome counted"

# Tampered: an old verdict (reward 1 kept) and a new one (reward 0, claimed_reward 1) are failures with reward 0.
{
  v t-d model passed 1; v t-d model failed 0
  printf '{"rollout_id":"old","task_id":"t-d","harness":"model","verdict":{"outcome":"tampered","reward":1,"passed":false}}\n'
  printf '{"rollout_id":"new","task_id":"t-d","harness":"model","verdict":{"outcome":"tampered","reward":0,"claimed_reward":1}}\n'
} >"$work/tampered.jsonl"
for flags in "" "--by harness"; do
  # shellcheck disable=SC2086
  "$verify" report -k 1 --json $flags "$work/tampered.jsonl" >"$work/t.json" 2>/dev/null || fail "tampered report $flags"
  # n = 4, c = 1; mean reward (1 + 0 + 0 + 0) / 4.
  jq -e '.overall.valid == 4 and .overall.passed == 1 and .overall.tampered == 2 and .overall.mean_reward == 0.25 and
         .overall.pass_at_k["1"] == 0.25' "$work/t.json" >/dev/null || fail "tampered $flags: $(jq -c .overall "$work/t.json")"
  # shellcheck disable=SC2086
  "$verify" report -k 1 --table $flags "$work/tampered.jsonl" 2>/dev/null |
    grep -q '2 trial(s) tampered with the verifier: counted as failed trials, reward 0' || fail "tampered $flags: table note"
done
"$verify" report -k 1 --by harness --html "$work/t.html" "$work/tampered.jsonl" >/dev/null 2>&1
grep -q 'tampered attempts are failed trials with reward 0 (2 here)' "$work/t.html" || fail "the page does not say tampered trials failed"

# compare: A's and B's values over the tasks both ran (t-a in both; t-b only in A).
grep '"t-a"' "$work/verdicts.jsonl" >"$work/b.jsonl"
"$verify" compare -k 1 --table "$work/verdicts.jsonl" "$work/b.jsonl" >"$work/cmp.txt" 2>/dev/null || fail "compare"
grep -q 'pass@1  A 0.4000 \[0.400, 0.400\]  B 0.4000 \[0.400, 0.400\]  B-A +0.000' "$work/cmp.txt" ||
  fail "compare overall: $(cat "$work/cmp.txt")"
grep -q 'A pass@1 0.7000 over 2 tasks' "$work/cmp.txt" || fail "compare: the whole run's level, labelled"

echo "verify_report: ok"
