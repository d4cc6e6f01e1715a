#!/usr/bin/env bash
# The fault matrix with real harnesses (issue 36): for each harness and
# upstream fault, the harness runs the "create hello.txt" task twice, once
# straight against the scripted model server (forge-launch --proxy pointed at
# it) and once through forge-proxy in front of it, and must end the same way:
# the same rollout outcome and exit status, the same verdict on the task's
# file. Through the proxy, every request the server saw is a call recorded
# under the rollout, the failed attempt included. A harness that fails a
# fault directly too is reported as such ("fails directly too"), not hidden.
# A difference the proxy is known to make is listed in KNOWN below (naming
# issue 36) and printed as "KNOWN DIFFERENCE", not as a pass; a listed case
# that behaves otherwise than listed (neither alike nor the known way) fails.
# At the end the cases run are printed as a table (harness x fault).
#
# Faults, all on the first agent call (the write tool call; the fakes'
# scenario steps, see tests/fake_upstream/fake_upstream.py):
#   500        HTTP 500, no Retry-After
#   429        HTTP 429 with Retry-After: 1 (Codex CLI retries a 429 only with it)
#   503        HTTP 503 with Retry-After: 1
#   529        HTTP 529 overloaded_error with retry-after: 1 (Anthropic's; Claude Code only)
#   cut        the stream broken off after some content
#   malformed  one stream event, after some content, is not valid JSON; the
#              stream then goes on to its end
#   slow       4 s before the answer's first byte: under every harness's
#              timeout, and past forge-proxy's first keepalive comment (3 s)
#
# Harnesses and their direct servers:
#   claude-code  Anthropic Messages: tests/fake_upstream/fake_anthropic.py --scenario
#                (through the proxy: /v1/messages translated to chat)
#   codex        the Responses API: fake_upstream.py's Responses stream
#   gemini-cli   the Gemini API (streamGenerateContent?alt=sse): fake_upstream.py's Gemini stream
#   openclaw, opencode, qwen-code   chat completions: fake_upstream.py
# Through the proxy the upstream is always fake_upstream.py's chat
# completions, where a 529 is sent as it is (the status a chat server with an
# Anthropic-style gateway would give).
#
# Gemini CLI sends a functionCall whole, so its fault step says a short text
# first (say_first): a cut or a bad event falls after that text, straight
# from the Gemini fake and through the proxy alike.
#
# FORGE_FAULT_CASES="opencode:cut qwen-code:429 ..." picks cases; "all" runs
# the whole matrix (37 cases, about 40 minutes on 2 busy cores; OpenClaw's
# take ~35 s a run). The default is a representative subset: every fault and
# every harness at least once, and the known differences (about 6 minutes).
source "$FORGE_SRC/tests/support/loopback_netns.sh"
source "$FORGE_SRC/tests/support/proxy_env.sh"
# FORGE_FAULT_KEEP=DIR: copy each case's files (logs, store, scenario) there to look at.
if [[ -n ${FORGE_FAULT_KEEP:-} ]]; then
  trap 'mkdir -p "$FORGE_FAULT_KEEP"; cp -r "$WORK"/. "$FORGE_FAULT_KEEP"/ 2>/dev/null; cleanup' EXIT
fi

HARNESSES=${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}
AGENT_TIMEOUT=${FORGE_HARNESS_TIMEOUT:-240s}

ALL_HARNESSES="claude-code codex gemini-cli openclaw opencode qwen-code"
ALL_FAULTS="500 429 503 529 cut malformed slow"
declare -A INSTALLED=(
  [claude-code]=claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe
  [codex]=codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
  [gemini-cli]=gemini-cli/node_modules/@google/gemini-cli/bundle/gemini.js
  [openclaw]=openclaw/node_modules/openclaw/openclaw.mjs
  [opencode]=opencode/node_modules/opencode-linux-x64/bin/opencode
  [qwen-code]=qwen-code/node_modules/@qwen-code/qwen-code/cli-entry.js)
declare -A TOOL=([claude-code]=Write [codex]=exec_command [gemini-cli]=write_file [openclaw]=write
                 [opencode]=write [qwen-code]=write_file)
declare -A ARGS=([claude-code]='{"file_path": "@FILE@", "content": "forge\n"}'
                 [codex]='{"cmd": "printf '"'"'forge\\n'"'"' > hello.txt"}'
                 [gemini-cli]='{"file_path": "@FILE@", "content": "forge\n"}'
                 [openclaw]='{"path": "@FILE@", "content": "forge\n"}'
                 [opencode]='{"filePath": "@FILE@", "content": "forge\n"}'
                 [qwen-code]='{"file_path": "@FILE@", "content": "forge\n"}')
declare -A MODEL=([claude-code]=policy [codex]=gpt-5 [gemini-cli]=gemini-2.5-pro [openclaw]=policy
                  [opencode]=policy [qwen-code]=policy)

# Differences the proxy is known to make (issue 36): "harness:fault" → the
# outcome seen through the proxy (as run_case prints it, without requests=)
# and why. Such a case prints KNOWN DIFFERENCE; it passes only if the proxy
# run ends as listed here, or as the direct run does (then: remove the entry).
# None now: an upstream event that is not JSON used to end the call with an
# error event (opencode exited 1 on it, Gemini CLI retried it); it is now
# relayed as it came and both behave as they do directly.
declare -A KNOWN=()
declare -A KNOWN_WHY=()

# The default: each fault and each harness at least once (issue 36's budget:
# at most ~6 minutes more than the five cases it had before).
# The malformed cases of opencode and Gemini CLI (once known differences) are in it.
DEFAULT_CASES="claude-code:529 claude-code:429 claude-code:malformed codex:500 codex:cut gemini-cli:slow
gemini-cli:malformed openclaw:cut opencode:malformed qwen-code:503"

# run_case HARNESS FAULT MODE(direct|proxy) → "OUTCOME exit=N verdict=V requests=N" on stdout;
# through the proxy, also checks that the store holds every request the server saw
# (a mismatch goes to $WORK/failures).
run_case() {
  local harness=$1 fault=$2 mode=$3
  local dir=$WORK/$harness-$fault-$mode run="faults-$harness-$fault-$mode-$$" task=hello
  mkdir -p "$dir"
  local rollout; rollout=$(printf '%s\n%s\n0' "$run" "$task" | sha256sum | cut -c1-24)
  local file=$dir/local/$run/$rollout/fs/work/hello.txt
  local args=${ARGS[$harness]//@FILE@/$file}
  python3 - "$dir/scenario.json" "${TOOL[$harness]}" "$args" "$fault" "$harness" <<'PY'
import json, sys
path, tool, args, fault, harness = sys.argv[1:]
first = {"tool_call": {"name": tool, "arguments": json.loads(args)}}
if harness == "gemini-cli":  # Gemini sends a call whole: a cut or a bad event falls in text said first
    first["say_first"] = "Writing the file."
first.update({
    "500": {"fail_once": 500},
    "429": {"fail_once": 429, "retry_after": "1"},
    "503": {"fail_once": 503, "retry_after": "1"},
    "529": {"fail_once": 529, "retry_after": "1"},
    "cut": {"cut_once": True},
    "malformed": {"malformed_once": True},
    "slow": {"delay_first": 4},
}[fault])
json.dump({"steps": [first, {"text": "Created hello.txt."}]}, open(path, "w"))
PY
  local fake=fake_upstream.py
  [[ $harness == claude-code && $mode == direct ]] && fake=fake_anthropic.py
  python3 "$FORGE_SRC/tests/fake_upstream/$fake" --port-file "$dir/up.port" --log "$dir/upstream.log" \
    --scenario "$dir/scenario.json" &
  local fake_pid=$!
  PIDS+=($fake_pid)
  for _ in $(seq 1 200); do [ -s "$dir/up.port" ] && break; sleep 0.05; done
  [ -s "$dir/up.port" ] || fail "$fake did not start"
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
  local seen; seen=$(wc -l <"$dir/upstream.log" 2>/dev/null || echo 0)
  if [[ $mode == proxy ]]; then
    local recorded
    recorded=$(sqlite3 "$store" "SELECT count(*) FROM calls WHERE rollout_id = '$rollout'")
    [[ "$seen" == "$recorded" ]] ||
      echo "$harness/$fault: the server saw $seen requests, $recorded recorded under the rollout" >>"$WORK/failures"
    kill "$proxy_pid" 2>/dev/null || true
  fi
  kill "$fake_pid" 2>/dev/null || true
  echo "$(jq -r '.outcome + " exit=" + ((.exit_code // "none")|tostring)' "$dir/rollouts.jsonl") verdict=$verdict" \
    "requests=$seen"
}

for h in $ALL_HARNESSES; do
  [[ -e "$HARNESSES/${INSTALLED[$h]}" ]] || fail "$HARNESSES/${INSTALLED[$h]} is missing (run scripts/install-harnesses.sh)"
done
command -v node >/dev/null || fail "node (>= 20) is not on PATH (Gemini CLI runs on it)"

cases=${FORGE_FAULT_CASES:-$DEFAULT_CASES}
if [[ $cases == all ]]; then
  cases=
  for h in $ALL_HARNESSES; do
    for f in $ALL_FAULTS; do
      [[ $f == 529 && $h != claude-code ]] && continue  # Anthropic's status: Claude Code's case
      cases+=" $h:$f"
    done
  done
fi
: >"$WORK/failures"
table=()
for c in $cases; do
  harness=${c%%:*} fault=${c#*:}
  [[ -n ${TOOL[$harness]:-} && " $ALL_FAULTS " == *" $fault "* ]] || fail "unknown case $c"
  t0=$SECONDS
  via_proxy=$(run_case "$harness" "$fault" proxy)
  echo "   $harness, $fault, through forge-proxy: $via_proxy ($((SECONDS - t0)) s)"
  t0=$SECONDS
  direct=$(run_case "$harness" "$fault" direct)
  echo "   $harness, $fault, directly: $direct ($((SECONDS - t0)) s)"
  d=${direct% requests=*} p=${via_proxy% requests=*}
  if [[ $d == "$p" ]]; then
    if [[ $d == "ok exit=0 verdict=passed" ]]; then
      result=alike
      pass "$harness recovers from $fault directly and through forge-proxy alike ($via_proxy)"
    else
      result="alike (fails directly too)"
      pass "$harness fails $fault directly too, and the same way through forge-proxy ($direct)"
    fi
    [[ -n ${KNOWN[$c]:-} ]] && echo "   note: $c is listed as a known difference but was alike: remove it from KNOWN"
    # Not a failure (a harness's retries may vary with timing), but shown: the
    # harness sent more, or fewer, requests through the proxy than directly.
    [[ ${direct##*requests=} == "${via_proxy##*requests=}" ]] ||
      { result+=", requests differ"; echo "   note: $c: ${direct##*requests=} requests directly, ${via_proxy##*requests=} through forge-proxy"; }
  elif [[ -n ${KNOWN[$c]:-} && $p == "${KNOWN[$c]}" ]]; then
    result="KNOWN DIFFERENCE"
    echo "KNOWN DIFFERENCE (issue 36): $harness/$fault: directly '$direct', through forge-proxy '$via_proxy': ${KNOWN_WHY[$c]}"
  else
    result=DIFFERS
    echo "$harness/$fault: directly '$direct', through forge-proxy '$via_proxy'" >>"$WORK/failures"
    echo "not ok - $harness/$fault: directly '$direct', through forge-proxy '$via_proxy'"
    for f in "$WORK/$harness-$fault-proxy/proxy.err" "$WORK/$harness-$fault-proxy/launch.err"; do
      [[ -s $f ]] && { echo "--- $f"; tail -5 "$f"; }
    done
  fi
  table+=("$(printf '| %-11s | %-9s | %-40s | %-40s | %s |' "$harness" "$fault" "$direct" "$via_proxy" "$result")")
done
echo
printf '| %-11s | %-9s | %-40s | %-40s | %s |\n' harness fault directly "through forge-proxy" result
for row in "${table[@]}"; do echo "$row"; done
if [[ -s "$WORK/failures" ]]; then
  fail "$(wc -l <"$WORK/failures") check(s) failed:
$(cat "$WORK/failures")"
fi
echo PASS
