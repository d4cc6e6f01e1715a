#!/usr/bin/env bash
# forge-verify's LLM judge against a scripted OpenAI-compatible endpoint on
# 127.0.0.1: a score, the cache (same task + judge + artefact: no second
# call), the API key, retries on HTTP 500 ending in verifier_error, a reply
# without a score, an unreachable judge, and a judge without a sandbox.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
verify="$FORGE_BIN/forge-verify"
image="${FORGE_BUSYBOX_IMAGE:-forge-busybox:latest}"
run_label="forge.run=e2e-judge-$$"

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  docker ps -aq --filter "label=$run_label" | xargs -r docker rm -f >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$FORGE_SRC/tests/e2e/verify/image.sh"
ensure_busybox_image "$image"

start_judge() {  # mode score name; sets $port (not in a subshell: the pid must be kept)
  python3 "$FORGE_SRC/tests/e2e/verify/fake_judge.py" "$1" "$2" "$work/$3.log" "$work/$3.port" \
    </dev/null >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [[ -s "$work/$3.port" ]] && break; sleep 0.1; done
  [[ -s "$work/$3.port" ]] || fail "fake judge $3 did not start"
  touch "$work/$3.log"
  port=$(cat "$work/$3.port")
}
hold() {
  docker run -d --network none --label forge.managed=1 --label "$run_label" "$image" sleep 600
}

printf '%s\n' '{"id":"t-judge","instruction":"answer","verifier":{"kind":"judge","timeout_sec":10,"model":"grader-1","rubric":"The answer is 42.","files":["/work/answer.txt"]}}' \
  '{"id":"t-final","instruction":"answer","verifier":{"kind":"judge","timeout_sec":10,"rubric":"The answer is 42."}}' \
  >"$work/tasks.jsonl"
rec() { printf '{"rollout_id":"%s","task_id":"%s","harness":"model","sandbox":{"backend":"docker","id":"%s"}}\n' "$1" "$2" "$3"; }

start_judge score 0.9 good; good=$port
store="$work/forge.db"
export FORGE_JUDGE_API_KEY=secret-judge-key
c1=$(hold); docker exec "$c1" sh -c 'echo 42 > /work/answer.txt'
rec r1 t-judge "$c1" >"$work/r1.jsonl"
"$verify" "$work/r1.jsonl" --tasks "$work/tasks.jsonl" --store "$store" --threshold 0.8 \
  --judge-url "http://127.0.0.1:$good/v1" >"$work/r1.out"
[[ $(jq -r .verdict.outcome "$work/r1.out") == passed ]] || fail "judge score 0.9 at threshold 0.8"
[[ $(jq -r .verdict.reward "$work/r1.out") == 0.9 ]] || fail "judge reward"
[[ $(jq -r .verdict.details.judge.cached "$work/r1.out") == false ]] || fail "first judgement marked cached"
[[ $(jq -r .verdict.details.judge.reason "$work/r1.out") == scripted ]] || fail "judge reason not kept"
[[ $(wc -l <"$work/good.log") -eq 1 ]] || fail "expected one judge call"
[[ $(jq -r .path "$work/good.log") == /v1/chat/completions ]] || fail "judge path"
[[ $(jq -r .auth "$work/good.log") == "Bearer secret-judge-key" ]] || fail "judge API key not sent"
[[ $(jq -r .body.model "$work/good.log") == grader-1 ]] || fail "task's judge model not used"
jq -r '.body.messages[1].content' "$work/good.log" | grep -q 'The answer is 42.' || fail "rubric not sent"
jq -r '.body.messages[1].content' "$work/good.log" | grep -q '=== /work/answer.txt ===' || fail "artefact not sent"

# The same artefact of the same task: answered from the store's cache.
c2=$(hold); docker exec "$c2" sh -c 'echo 42 > /work/answer.txt'
rec r2 t-judge "$c2" >"$work/r2.jsonl"
"$verify" "$work/r2.jsonl" --tasks "$work/tasks.jsonl" --store "$store" --threshold 0.8 \
  --judge-url "http://127.0.0.1:$good/v1" >"$work/r2.out"
[[ $(jq -r .verdict.details.judge.cached "$work/r2.out") == true ]] || fail "cache not used"
[[ $(jq -r .verdict.reward "$work/r2.out") == 0.9 ]] || fail "cached reward"
[[ $(wc -l <"$work/good.log") -eq 1 ]] || fail "a cached judgement called the judge again"
# A different artefact is judged anew.
c3=$(hold); docker exec "$c3" sh -c 'echo 41 > /work/answer.txt'
rec r3 t-judge "$c3" >"$work/r3.jsonl"
"$verify" "$work/r3.jsonl" --tasks "$work/tasks.jsonl" --store "$store" --threshold 0.8 \
  --judge-url "http://127.0.0.1:$good/v1" >"$work/r3.out"
[[ $(jq -r .verdict.details.judge.cached "$work/r3.out") == false ]] || fail "new artefact served from cache"
[[ $(wc -l <"$work/good.log") -eq 2 ]] || fail "new artefact not judged"

# A judge without a sandbox: the record's final_output is the artefact.
printf '{"rollout_id":"r-final","task_id":"t-final","harness":"model","final_output":"It is 42."}\n' >"$work/final.jsonl"
"$verify" "$work/final.jsonl" --tasks "$work/tasks.jsonl" --threshold 0.8 \
  --judge-url "http://127.0.0.1:$good/v1" --judge-model default-grader >"$work/final.out"
[[ $(jq -r .verdict.outcome "$work/final.out") == passed ]] || fail "judge of final_output"
[[ $(tail -1 "$work/good.log" | jq -r .body.model) == default-grader ]] || fail "--judge-model not used"

# Failing judges are verifier errors, never failed rollouts.
start_judge error 0 bad; bad=$port
c4=$(hold); docker exec "$c4" sh -c 'echo 42 > /work/answer.txt'
rec r4 t-judge "$c4" >"$work/r4.jsonl"
set +e
"$verify" "$work/r4.jsonl" --tasks "$work/tasks.jsonl" --judge-url "http://127.0.0.1:$bad/v1" >"$work/r4.out"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "judge failure exit $rc, expected 1"
[[ $(jq -r .verdict.outcome "$work/r4.out") == verifier_error ]] || fail "HTTP 500 judge: $(jq -r .verdict.outcome "$work/r4.out")"
jq -r .verdict.message "$work/r4.out" | grep -q 'HTTP 500' || fail "judge failure message"
[[ $(wc -l <"$work/bad.log") -eq 3 ]] || fail "expected 3 attempts on HTTP 500, saw $(wc -l <"$work/bad.log")"

start_judge junk 0 junk; junk=$port
printf '{"rollout_id":"r-junk","task_id":"t-final","final_output":"42"}\n' >"$work/junk.jsonl"
"$verify" "$work/junk.jsonl" --tasks "$work/tasks.jsonl" --judge-url "http://127.0.0.1:$junk/v1" \
  --judge-model m >"$work/junk.out" || true
[[ $(jq -r .verdict.outcome "$work/junk.out") == verifier_error ]] || fail "scoreless reply"
jq -r .verdict.message "$work/junk.out" | grep -q 'no JSON object' || fail "scoreless reply message"

# Nothing listens on this port any more.
kill "${pids[2]}"; wait "${pids[2]}" 2>/dev/null || true
"$verify" "$work/junk.jsonl" --tasks "$work/tasks.jsonl" --judge-url "http://127.0.0.1:$junk/v1" \
  --judge-model m >"$work/gone.out" || true
[[ $(jq -r .verdict.outcome "$work/gone.out") == verifier_error ]] || fail "unreachable judge"

echo "verify_judge: ok"
