#!/usr/bin/env bash
# The reference ReACT harness end to end against a scripted model server on
# 127.0.0.1, on both backends: local (the script runs on the host with curl)
# and docker (busybox sh + wget, network host). The fake model answers with
# one shell command, then DONE; the test checks the file the command made,
# the bearer key the server saw (the rollout's secret, hashed in the store),
# and the tool output fed back on the second call.
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
LAUNCH="$BIN/forge-launch"
work="$(mktemp -d)"
run="react-$$-$RANDOM"
server=""
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null || true
  "$LAUNCH" --backend docker gc --run-id "$run-docker" >/dev/null 2>&1 || true
  FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local gc --run-id "$run-local" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$SRC/tests/support/react_model.py" "$work/port" --log "$work/calls.jsonl" \
  --command 'echo "forge says \"hi\"" > hello.txt && cat hello.txt' &
server=$!
for _ in $(seq 50); do [[ -s "$work/port" ]] && break; sleep 0.1; done
proxy="http://127.0.0.1:$(cat "$work/port")"
echo '{"id":"hello","instruction":"Create hello.txt saying hi"}' >"$work/tasks.jsonl"

check() {  # backend out
  local backend=$1 out=$2
  [[ "$(jq -r .outcome "$out")" == ok ]] || fail "$backend: outcome $(cat "$out")"
  grep -q 'react-agent: done after 2 turn' <<<"$(jq -r .logs.stdout "$out")" || fail "$backend: $(jq -r .logs "$out")"
  [[ "$(wc -l <"$work/calls.jsonl")" == 2 ]] || fail "$backend: expected 2 model calls"
  local key; key="$(jq -r .auth "$work/calls.jsonl" | head -1 | sed 's/^Bearer //')"
  [[ "$key" == forge-* ]] || fail "$backend: no secret in the Authorization header"
  [[ "$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)" == \
     "$(sqlite3 "$work/forge.db" "select secret_hash from rollouts where id='$(jq -r .rollout_id "$out")'")" ]] \
    || fail "$backend: secret hash mismatch"
  [[ "$(jq -r .path "$work/calls.jsonl" | head -1)" == /v1/chat/completions ]] || fail "$backend: path"
  # The second call carries the command's output back, escaped and intact.
  [[ "$(jq -rs '.[-1].messages[-1].content' "$work/calls.jsonl")" == $'forge says "hi"\n[exit status 0]' ]] \
    || fail "$backend: tool output not fed back: $(tail -1 "$work/calls.jsonl")"
  [[ "$(jq -rs '.[0].messages[1].content' "$work/calls.jsonl")" == "Create hello.txt saying hi" ]] || fail "$backend: instruction"
}

echo "== local backend"
FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local --store "$work/forge.db" --run-id "$run-local" \
  --harness react --proxy "$proxy" --hold "$work/tasks.jsonl" >"$work/local.out"
check local "$work/local.out"
[[ "$(cat "$(jq -r .sandbox.id "$work/local.out")/fs/work/hello.txt")" == 'forge says "hi"' ]] || fail "local: hello.txt"

echo "== docker backend (busybox: sh + wget)"
# The local half has passed; without an engine the docker half is a skip.
source "$SRC/tests/support/require_docker.sh"
require_docker "the docker half of launch_react"
bash "$SRC/scripts/make-busybox-image.sh"
: >"$work/calls.jsonl"
"$LAUNCH" --backend docker --store "$work/forge.db" --run-id "$run-docker" --image forge-busybox:latest \
  --harness react --proxy "$proxy" --hold "$work/tasks.jsonl" >"$work/docker.out"
check docker "$work/docker.out"
[[ "$(docker exec "$(jq -r .sandbox.id "$work/docker.out")" cat /work/hello.txt)" == 'forge says "hi"' ]] \
  || fail "docker: hello.txt"
echo PASS
