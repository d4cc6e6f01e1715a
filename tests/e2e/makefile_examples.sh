#!/usr/bin/env bash
# Makefile.examples as the README's crontab line runs it: the whole job
# (proxy, launch in Docker, verify, dedup, SFT, RL, report) under flock; a second run while the
# first holds the lock exits 75 at once; a rerun of a finished run does
# nothing; a rerun after the collected file is lost resumes the run id
# without redoing any attempt; gc leaves no container of the run.
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
source "$SRC/tests/support/require_docker.sh"
require_docker
bash "$SRC/scripts/make-busybox-image.sh" >/dev/null
work="$(mktemp -d)"
run_id="mk-$$-$RANDOM"
pids=()
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
proxy_port=$(free_port)
M() { make --no-print-directory -C "$work" -f "$SRC/Makefile.examples" FORGE_BIN="$BIN" \
        TASKS="$work/tasks.jsonl" STORE="$work/out/forge.db" UPSTREAM="http://127.0.0.1:$(cat "$work/up.port")" \
        PROXY_PORT="$proxy_port" RUN_ID="$run_id" ATTEMPTS=2 JOBS=2 HARNESS=command BACKEND=docker \
        K=1,2 RL_FLAGS="--advantage grpo" "$@"; }
# Exactly the README's crontab line.
cron() { (cd "$work" && flock -n -o -E 75 .forge.lock make --no-print-directory -f "$SRC/Makefile.examples" \
        FORGE_BIN="$BIN" TASKS="$work/tasks.jsonl" STORE="$work/out/forge.db" \
        UPSTREAM="http://127.0.0.1:$(cat "$work/up.port")" PROXY_PORT="$proxy_port" RUN_ID="$run_id" \
        ATTEMPTS=2 JOBS=2 HARNESS=command BACKEND=docker K=1,2 RL_FLAGS="--advantage grpo" all); }
cleanup() {
  M stop >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  "$BIN/forge-launch" --backend docker gc --run-id "$run_id" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$SRC/tests/fake_upstream/fake_upstream.py" --port-file "$work/up.port" --log "$work/upstream.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/up.port" ] && break; sleep 0.1; done

# Each attempt asks the model once through the proxy with its own key, then
# does the work; "flaky" fails its second attempt so the RL groups have variance.
agent='wget -q -O /dev/null --header "Authorization: Bearer $OPENAI_API_KEY" --header "Content-Type: application/json" --post-data "{\"model\":\"policy\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$OPENAI_BASE_URL/chat/completions"'
jq -nc --arg a "$agent" '{id:"steady", instruction:"write hello", environment:{image:"forge-busybox:latest"},
  command:($a + " && echo hello > /work/hello.txt"),
  verifier:{kind:"command", command:"grep -qx hello /work/hello.txt"}}' >"$work/tasks.jsonl"
jq -nc --arg a "$agent" '{id:"flaky", instruction:"write hello on the first attempt", environment:{image:"forge-busybox:latest"},
  command:($a + " && if [ \"$FORGE_ATTEMPT\" = 0 ]; then echo hello > /work/hello.txt; fi"),
  verifier:{kind:"command", command:"grep -qx hello /work/hello.txt"}}' >>"$work/tasks.jsonl"
calls() { [ -f "$work/upstream.log" ] && wc -l <"$work/upstream.log" || echo 0; }

echo "== the whole job as cron runs it"
cron >"$work/run1.log" 2>&1 || { cat "$work/run1.log" >&2; fail "first cron run failed"; }
out=$work/out
[ "$(wc -l <"$out/rollouts.jsonl")" -eq 4 ] || fail "expected 4 rollouts, got $(wc -l <"$out/rollouts.jsonl")"
[ "$(jq -s '[.[] | select(.verdict.outcome == "passed")] | length' "$out/verdicts.jsonl")" -eq 3 ] ||
  fail "expected 3 passed verdicts: $(jq -c .verdict.outcome "$out/verdicts.jsonl" | tr '\n' ' ')"
[ "$(calls)" -eq 4 ] || fail "the upstream saw $(calls) calls, expected 4 (one per attempt)"
[ "$(wc -l <"$out/sft.jsonl")" -ge 1 ] || fail "no SFT samples"
jq -e '.messages | length >= 2' "$out/sft.jsonl" >/dev/null || fail "SFT sample without messages"
[ "$(wc -l <"$out/rl-index.jsonl")" -ge 1 ] || fail "no RL batch"
ls "$out"/rl/*.safetensors >/dev/null || fail "no safetensors written"
grep -q "\"pass_at_k\"" "$work/run1.log" || fail "no pass@k report in the output (JSON on a pipe)"
[ "$(docker ps -aq --filter "label=forge.run=$run_id" | wc -l)" -eq 0 ] ||
  fail "sandboxes of the run left after verify released them"

echo "== a second run while the first holds the lock exits 75 at once"
# The holder is the very process with the lock (exec), so killing it frees the lock.
( flock 9 && exec sleep 20 ) 9>"$work/.forge.lock" &
holder=$!
pids+=($holder)
sleep 0.5
start=$(date +%s)
set +e; cron >"$work/locked.log" 2>&1; rc=$?; set -e
[ "$rc" -eq 75 ] || { cat "$work/locked.log" >&2; fail "locked run exited $rc, expected 75"; }
[ $(( $(date +%s) - start )) -lt 10 ] || fail "locked run waited for the lock"
kill "$holder" 2>/dev/null || true; wait "$holder" 2>/dev/null || true

echo "== a rerun of the finished run does nothing"
before=$(stat -c %Y "$out/rollouts.jsonl")
cron >"$work/run2.log" 2>&1 || { cat "$work/run2.log" >&2; fail "second cron run failed"; }
[ "$(stat -c %Y "$out/rollouts.jsonl")" = "$before" ] || fail "rollouts.jsonl was rebuilt"
[ "$(calls)" -eq 4 ] || fail "the rerun called the model again ($(calls) calls)"
M -q out/sft.jsonl out/rl-index.jsonl || fail "make -q: the SFT and RL files are not up to date after a finished run"

echo "== after the collected file is lost, the run id resumes: no attempt is redone"
rm -f "$out/rollouts.jsonl"
M collect >"$work/run3.log" 2>&1 || { cat "$work/run3.log" >&2; fail "resumed collect failed"; }
[ "$(wc -l <"$out/rollouts.jsonl")" -eq 4 ] || fail "resumed run lost rollouts"
[ "$(jq -s '[.[] | select(.resumed == true)] | length' "$out/rollouts.jsonl")" -eq 4 ] ||
  fail "resumed run redid attempts: $(jq -c '{task_id, attempt, resumed}' "$out/rollouts.jsonl" | tr '\n' ' ')"
[ "$(calls)" -eq 4 ] || fail "the resumed run called the model again ($(calls) calls)"

echo "== gc and stop leave nothing behind"
M gc >/dev/null 2>&1 || fail "gc failed"
[ "$(docker ps -aq --filter "label=forge.run=$run_id" | wc -l)" -eq 0 ] || fail "gc left containers"
M stop
sleep 0.5
! curl -fs "http://127.0.0.1:$proxy_port/healthz" >/dev/null 2>&1 || fail "stop left forge-proxy running"
echo "PASS makefile_examples"
