#!/usr/bin/env bash
# forge-verify against the real Docker engine with Harbor-style tasks:
# reward.txt, reward.json, a missing reward file, a test.sh past its deadline,
# a reward planted by the agent, the command and files kinds, a vanished
# sandbox, a launch-reported agent timeout, a malformed input line, release
# and --keep, verdicts in the store, and `report` on the result.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
source "$FORGE_SRC/tests/e2e/verify/setup.sh"
verify_setup verify
check() { local what="$1"; shift; "$@" || fail "$what"; }

# A held sandbox as forge-launch leaves it: a running container labelled
# forge.managed=1 whose "agent" already worked in /work.
hold() {
  docker run -d --network none --label forge.managed=1 --label "$run_label" \
    "$image" sleep 600
}
agent() { docker exec "$1" sh -c "$2"; }

# --- tasks --------------------------------------------------------------------
mk_task() {  # name, test.sh body
  mkdir -p "$work/tasks/$1/tests"
  printf '#!/bin/sh\n%s\n' "$2" >"$work/tasks/$1/tests/test.sh"
}
mk_task txt 'if [ "$(cat /work/answer.txt)" = 42 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi'
mk_task json 'echo "{\"reward\": 0.5, \"style\": 1}" > /logs/verifier/reward.json'
mk_task missing 'echo "tests ran but wrote nothing"; exit 3'
mk_task slow 'sleep 60; echo 1 > /logs/verifier/reward.txt'
# The real test: only an answer of 42 earns a reward.
mk_task planted 'echo seen-by-test > /logs/verifier/marker; if [ "$(cat /work/answer.txt 2>/dev/null)" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'

task_json() {  # id, verifier JSON
  printf '{"id":"%s","instruction":"do it","verifier":%s}\n' "$1" "$2"
}
{
  task_json t-txt "{\"kind\":\"harbor\",\"timeout_sec\":30,\"tests_dir\":\"$work/tasks/txt/tests\"}"
  task_json t-json "{\"kind\":\"harbor\",\"timeout_sec\":30,\"tests_dir\":\"$work/tasks/json/tests\"}"
  task_json t-missing "{\"kind\":\"harbor\",\"timeout_sec\":30,\"tests_dir\":\"$work/tasks/missing/tests\"}"
  task_json t-slow "{\"kind\":\"harbor\",\"timeout_sec\":2,\"tests_dir\":\"$work/tasks/slow/tests\"}"
  task_json t-planted "{\"kind\":\"harbor\",\"timeout_sec\":30,\"tests_dir\":\"$work/tasks/planted/tests\"}"
  task_json t-cmd '{"kind":"command","timeout_sec":10,"command":"grep -qx 42 /work/answer.txt"}'
  task_json t-files '{"kind":"files","expect":[{"path":"/work/answer.txt","equals":"42\n"},{"path":"/work/notes.txt","contains":"done"}]}'
} >"$work/tasks.jsonl"

# --- sandboxes the "agent" worked in --------------------------------------------
c_txt=$(hold);     agent "$c_txt" 'echo 42 > /work/answer.txt'
c_txt_bad=$(hold); agent "$c_txt_bad" 'echo 41 > /work/answer.txt'
c_json=$(hold)
c_missing=$(hold)
c_slow=$(hold)
# The agent plants a reward and a doctored test where the verifier will look.
c_planted=$(hold); agent "$c_planted" 'mkdir -p /logs/verifier /tests && echo 1 > /logs/verifier/reward.txt &&
  printf "echo 1 > /logs/verifier/reward.txt\n" > /tests/test.sh && echo 7 > /work/answer.txt'
c_cmd=$(hold);     agent "$c_cmd" 'echo 42 > /work/answer.txt'
c_files=$(hold);   agent "$c_files" 'echo 42 > /work/answer.txt'   # notes.txt missing: 1 of 2 checks
c_timeout=$(hold)
c_keep=$(hold);    agent "$c_keep" 'echo 42 > /work/answer.txt'

rec() {  # rollout id, task id, container id, extra fields
  printf '{"rollout_id":"%s","task_id":"%s","attempt":0,"harness":"model","sandbox":{"backend":"docker","id":"%s"}%s}\n' \
    "$1" "$2" "$3" "${4:-}"
}
{
  rec r-txt t-txt "$c_txt"
  rec r-txt-bad t-txt "$c_txt_bad"
  rec r-json t-json "$c_json"
  echo '{"this line": is not json'
  rec r-missing t-missing "$c_missing"
  rec r-slow t-slow "$c_slow"
  rec r-planted t-planted "$c_planted"
  rec r-cmd t-cmd "$c_cmd"
  rec r-files t-files "$c_files"
  rec r-gone t-txt "0123456789abcdef-no-such-container"
  rec r-timeout t-txt "$c_timeout" ',"outcome":"agent_timeout"'
  rec r-notask t-nowhere "$c_keep"
} >"$work/rollouts.jsonl"

# --- run ------------------------------------------------------------------------
store="$work/forge.db"
start=$(date +%s)
set +e
"$verify" "$work/rollouts.jsonl" --tasks "$work/tasks.jsonl" --store "$store" -j 4 \
  >"$work/out.jsonl" 2>"$work/err.txt"
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
cat "$work/err.txt" >&2
# A bad input line and an unknown task are input errors (65): they outrank
# the negative verdicts (1).
[[ $rc -eq 65 ]] || fail "exit status $rc, expected 65"
grep -q 'rollouts.jsonl:4: ' "$work/err.txt" || fail "the malformed line is not reported as file:line"
grep -q 'rollouts.jsonl:12: task "t-nowhere" not found' "$work/err.txt" || fail "unknown task not reported"
[[ $(wc -l <"$work/out.jsonl") -eq 10 ]] || fail "expected 10 verdicts, got $(wc -l <"$work/out.jsonl")"
(( elapsed < 40 )) || fail "run took ${elapsed}s; the 2 s verifier deadline was not enforced"

outcome() { jq -r --arg id "$1" 'select(.rollout_id == $id) | .verdict.outcome' "$work/out.jsonl"; }
field() { jq -r --arg id "$1" "select(.rollout_id == \$id) | .verdict$2" "$work/out.jsonl"; }

[[ $(outcome r-txt) == passed ]] || fail "reward.txt 1: $(outcome r-txt)"
[[ $(field r-txt .reward) == 1 ]] || fail "reward.txt value"
[[ $(field r-txt .threshold) == 1 ]] || fail "threshold not recorded"
[[ $(outcome r-txt-bad) == failed ]] || fail "reward.txt 0: $(outcome r-txt-bad)"
[[ $(outcome r-json) == failed ]] || fail "reward.json 0.5 under threshold 1: $(outcome r-json)"
[[ $(field r-json .reward) == 0.5 ]] || fail "reward.json primary value"
[[ $(field r-json .rewards.style) == 1 ]] || fail "reward.json named values"
[[ $(outcome r-missing) == verifier_error ]] || fail "missing reward file: $(outcome r-missing)"
field r-missing .message | grep -q 'no reward file' || fail "missing reward message"
field r-missing .log | grep -q 'tests ran but wrote nothing' || fail "log tail not kept"
[[ $(field r-missing .exit_code) == 3 ]] || fail "test.sh exit status not recorded"
[[ $(outcome r-slow) == verifier_timeout ]] || fail "slow test.sh: $(outcome r-slow)"
[[ $(field r-slow .timeout_sec) == 2 ]] || fail "effective timeout not recorded"
# The planted files are moved aside unread before the real tests arrive, so
# the runtime evidence has nothing of the agent's in the verifier's hands:
# the real test ran and scored the real answer (7), a failure
# (tests/e2e/verify_adversarial*.sh have the attacks that end tampered).
[[ $(outcome r-planted) == failed ]] || fail "planted reward: $(outcome r-planted)"
[[ $(field r-planted .reward) == 0 ]] || fail "planted reward value"
[[ $(outcome r-cmd) == passed ]] || fail "command verifier: $(outcome r-cmd)"
[[ $(outcome r-files) == failed ]] || fail "files verifier: $(outcome r-files)"
[[ $(field r-files .reward) == 0.5 ]] || fail "files verifier share of checks"
[[ $(outcome r-gone) == infra_error ]] || fail "vanished sandbox: $(outcome r-gone)"
[[ $(outcome r-timeout) == agent_timeout ]] || fail "launch outcome not kept: $(outcome r-timeout)"
# Pass-through: fields the verifier does not know survive.
[[ $(jq -r 'select(.rollout_id == "r-txt") | .attempt' "$work/out.jsonl") == 0 ]] || fail "fields lost"

# Released: every verified sandbox is gone; the one whose task was unknown is kept.
for c in "$c_txt" "$c_txt_bad" "$c_json" "$c_missing" "$c_slow" "$c_planted" "$c_cmd" "$c_files" "$c_timeout"; do
  if docker inspect "$c" >/dev/null 2>&1; then fail "sandbox $c was not released"; fi
done
docker inspect "$c_keep" >/dev/null 2>&1 || fail "the sandbox of an unverifiable record was released"

# The store holds every verdict with its outcome and reward.
[[ $(sqlite3 "$store" 'SELECT count(*) FROM verdicts') -eq 10 ]] || fail "verdicts in the store"
[[ $(sqlite3 "$store" "SELECT outcome || ':' || reward FROM verdicts WHERE rollout_id = 'r-json'") == "failed:0.5" ]] ||
  fail "stored verdict of r-json"

# --keep leaves the sandbox; all-passed is exit 0.
rec r-keep t-txt "$c_keep" >"$work/keep.jsonl"
"$verify" run "$work/keep.jsonl" --tasks "$work/tasks.jsonl" --keep >"$work/keep.out" ||
  fail "a passing run exits non-zero"
[[ $(jq -r .verdict.outcome "$work/keep.out") == passed ]] || fail "keep run verdict"
docker inspect "$c_keep" >/dev/null 2>&1 || fail "--keep released the sandbox"

# Threshold 0.5 turns the reward.json rollout into a pass; a negative verdict is exit 1.
c_json2=$(hold)
rec r-json2 t-json "$c_json2" >"$work/json2.jsonl"
"$verify" run "$work/json2.jsonl" --tasks "$work/tasks.jsonl" --threshold 0.5 >"$work/json2.out"
[[ $(jq -r .verdict.outcome "$work/json2.out") == passed ]] || fail "--threshold 0.5"
[[ $(jq -r .verdict.threshold "$work/json2.out") == 0.5 ]] || fail "--threshold not recorded"
c_bad2=$(hold); agent "$c_bad2" 'echo 0 > /work/answer.txt'
rec r-bad2 t-txt "$c_bad2" >"$work/bad2.jsonl"
set +e; "$verify" "$work/bad2.jsonl" --tasks "$work/tasks.jsonl" >/dev/null 2>&1; rc=$?; set -e
[[ $rc -eq 1 ]] || fail "a failed verdict exits $rc, expected 1"

# --- report ---------------------------------------------------------------------
"$verify" report -k 1 --json "$work/out.jsonl" >"$work/report.json"
[[ $(jq -r '.overall.excluded' "$work/report.json") == 1 ]] || fail "report: infra error not excluded"
[[ $(jq -r '.tasks[] | select(.task_id == "t-txt") | .valid' "$work/report.json") == 3 ]] ||
  fail "report: t-txt valid trials (passed, failed, agent_timeout)"
[[ $(jq -r '.tasks[] | select(.task_id == "t-txt") | .pass_at_k["1"]' "$work/report.json") == 0.3333333333333333 ]] ||
  fail "report: t-txt pass@1"
set +e
"$verify" report -k 1,2 "$work/out.jsonl" >/dev/null 2>"$work/report.err"; rc=$?
set -e
[[ $rc -eq 65 ]] || fail "report with k > n exits $rc, expected 65"
grep -q 't-json (1 valid)' "$work/report.err" || fail "report refusal does not name the task"

echo "verify_harbor: ok"
