#!/usr/bin/env bash
# The fault matrix with real harnesses: for each harness and upstream fault,
# the harness runs the "create hello.txt" task twice, once straight against
# the scripted model server (forge-launch --proxy pointed at it) and once
# through forge-proxy, and must end the same way: the same exit status and
# outcome, the same verdict on the task's file. Through the proxy, every
# request the server saw is a call recorded under the rollout, the failed
# attempt included. A harness that fails a fault directly too is reported
# as such ("fails directly too"), not hidden.
#
# Faults (on the first agent call; see tests/fake_upstream/fake_upstream.py):
#   429   HTTP 429 with Retry-After: 1 (Codex CLI retries a 429 only with it)
#   cut   the stream broken off after some content (Qwen Code and opencode
#         retry a broken connection, and exit 1 on an error event)
# Codex speaks only the Responses API: run directly, the scripted server
# answers it in that API; through the proxy, in chat completions.
# FORGE_FAULT_CASES="opencode:cut qwen-code:429 ..." picks cases.
source "$FORGE_SRC/tests/support/loopback_netns.sh"
source "$FORGE_SRC/tests/support/proxy_env.sh"

HARNESSES=${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}
AGENT_TIMEOUT=${FORGE_HARNESS_TIMEOUT:-240s}

installed() { [[ -e "$HARNESSES/$1" ]] || fail "$HARNESSES/$1 is missing (run scripts/install-harnesses.sh)"; }
installed opencode/node_modules/opencode-linux-x64/bin/opencode
installed qwen-code/node_modules/@qwen-code/qwen-code/cli-entry.js
installed codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex

declare -A TOOL=([opencode]=write [qwen-code]=write_file [codex]=exec_command)
declare -A ARGS=([opencode]='{"filePath": "@FILE@", "content": "forge\n"}'
                 [qwen-code]='{"file_path": "@FILE@", "content": "forge\n"}'
                 [codex]='{"cmd": "printf '"'"'forge\\n'"'"' > hello.txt"}')
declare -A MODEL=([opencode]=policy [qwen-code]=policy [codex]=gpt-5)

# run_case HARNESS FAULT MODE(direct|proxy) → "OUTCOME EXIT VERDICT" on stdout;
# through the proxy, also checks that the store holds every request the server saw.
run_case() {
  local harness=$1 fault=$2 mode=$3
  local dir=$WORK/$harness-$fault-$mode run="faults-$harness-$fault-$mode-$$" task=hello
  mkdir -p "$dir"
  local rollout; rollout=$(printf '%s\n%s\n0' "$run" "$task" | sha256sum | cut -c1-24)
  local file=$dir/local/$run/$rollout/fs/work/hello.txt
  local args=${ARGS[$harness]//@FILE@/$file}
  python3 - "$dir/scenario.json" "${TOOL[$harness]}" "$args" "$fault" <<'PY'
import json, sys
path, tool, args, fault = sys.argv[1:]
first = {"tool_call": {"name": tool, "arguments": json.loads(args)}}
if fault == "429":
    first.update({"fail_once": 429, "retry_after": "1"})
elif fault == "cut":
    first["cut_once"] = True
json.dump({"steps": [first, {"text": "Created hello.txt."}]}, open(path, "w"))
PY
  python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --port-file "$dir/up.port" --log "$dir/upstream.log" \
    --scenario "$dir/scenario.json" &
  local fake_pid=$!
  PIDS+=($fake_pid)
  for _ in $(seq 1 100); do [ -s "$dir/up.port" ] && break; sleep 0.05; done
  local up=http://127.0.0.1:$(cat "$dir/up.port") store=$dir/forge.db base proxy_pid=
  base=$up
  if [[ $mode == proxy ]]; then
    local port; port=$(free_port)
    "$FORGE_BIN/forge-proxy" --store "$store" --port "$port" --health-interval 0 --upstream "$up" \
      2>>"$dir/proxy.err" &
    proxy_pid=$!
    PIDS+=($proxy_pid)
    base=http://127.0.0.1:$port
    wait_for "$base/healthz"
  fi
  printf '%s\n' '{"id":"hello","instruction":"Create a file hello.txt in the current directory containing the single line: forge","verifier":{"kind":"files","expect":[{"path":"/work/hello.txt","equals":"forge\n"}]}}' \
    >"$dir/tasks.jsonl"
  FORGE_LOCAL_ROOT=$dir/local "$FORGE_BIN/forge-launch" --backend local --store "$store" --run-id "$run" \
    --harness "$harness" --harness-install-dir "$HARNESSES" --proxy "$base" --model "${MODEL[$harness]}" \
    --agent-timeout "$AGENT_TIMEOUT" --memory 64g --hold "$dir/tasks.jsonl" \
    >"$dir/rollouts.jsonl" 2>"$dir/launch.err" || fail "$harness/$fault/$mode: forge-launch exit $?: $(tail -3 "$dir/launch.err")"
  local verdict
  FORGE_LOCAL_ROOT=$dir/local "$FORGE_BIN/forge-verify" "$dir/rollouts.jsonl" --store "$store" \
    >"$dir/verdicts.jsonl" 2>"$dir/verify.err" || true
  verdict=$(jq -r '.verdict.outcome // "none"' "$dir/verdicts.jsonl" 2>/dev/null || echo none)
  if [[ $mode == proxy ]]; then
    local seen recorded
    seen=$(wc -l <"$dir/upstream.log")
    recorded=$(sqlite3 "$store" "SELECT count(*) FROM calls WHERE rollout_id = '$rollout'")
    [[ "$seen" == "$recorded" ]] || fail "$harness/$fault: the server saw $seen requests, $recorded recorded under the rollout"
    kill "$proxy_pid" 2>/dev/null || true
  fi
  kill "$fake_pid" 2>/dev/null || true
  echo "$(jq -r '.outcome + " exit=" + ((.exit_code // "none")|tostring)' "$dir/rollouts.jsonl") verdict=$verdict" \
    "requests=$(wc -l <"$dir/upstream.log")"
}

cases=${FORGE_FAULT_CASES:-"codex:429 opencode:429 opencode:cut qwen-code:429 qwen-code:cut"}
for c in $cases; do
  harness=${c%%:*} fault=${c#*:}
  via_proxy=$(run_case "$harness" "$fault" proxy)
  echo "   $harness, $fault, through forge-proxy: $via_proxy"
  direct=$(run_case "$harness" "$fault" direct)
  echo "   $harness, $fault, directly: $direct"
  [[ ${direct% requests=*} == "${via_proxy% requests=*}" ]] ||
    fail "$harness/$fault: directly '$direct', through forge-proxy '$via_proxy'"
  if [[ $direct == "ok exit=0 verdict=passed"* ]]; then
    pass "$harness recovers from $fault directly and through forge-proxy alike ($via_proxy)"
  else
    pass "$harness fails $fault directly too, and the same way through forge-proxy ($direct)"
  fi
done
echo PASS
