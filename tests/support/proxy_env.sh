# Shared setup for forge-proxy's end-to-end tests (sourced, not a test).
# Starts the scripted fake upstream and forge-proxy on free loopback ports;
# everything is torn down by the EXIT trap.
set -euo pipefail
: "${FORGE_BIN:?FORGE_BIN must point at the build directory}"
: "${FORGE_SRC:?FORGE_SRC must point at the source directory}"

WORK=$(mktemp -d /tmp/forge-proxy-e2e.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok - $*"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_for() {  # url
  for _ in $(seq 1 100); do
    curl -s -o /dev/null "$1" && return 0
    sleep 0.05
  done
  fail "nothing answers at $1"
}

# start_fake NAME → sets FAKE_PORT, FAKE_LOG
start_fake() {
  FAKE_LOG=$WORK/$1.log
  python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --port-file "$WORK/$1.port" --log "$FAKE_LOG" &
  PIDS+=($!)
  for _ in $(seq 1 100); do [ -f "$WORK/$1.port" ] && break; sleep 0.05; done
  FAKE_PORT=$(cat "$WORK/$1.port")
}

# start_proxy STORE ARGS... → sets PROXY_PORT, PROXY_PID, PROXY (base URL)
start_proxy() {
  local store=$1; shift
  PROXY_PORT=$(free_port)
  "$FORGE_BIN/forge-proxy" --store "$store" --port "$PROXY_PORT" --health-interval 0 "$@" \
    2>>"$WORK/proxy.err" &
  PROXY_PID=$!
  PIDS+=($PROXY_PID)
  PROXY=http://127.0.0.1:$PROXY_PORT
  wait_for "$PROXY/healthz"
}

# store_write STORE SQL: a write beside a running proxy, whose writer holds
# the store's lock while it commits: waited for, not failed with "locked".
store_write() { sqlite3 -cmd ".timeout 10000" "$1" "$2"; }

# register_rollout STORE ID SECRET: what forge-launch does, by hand.
register_rollout() {
  local hash
  hash=$(printf '%s' "$3" | sha256sum | cut -d' ' -f1)
  store_write "$1" "INSERT INTO rollouts (id, run_id, task_id, attempt, harness, secret_hash, status, created_at, updated_at)
                VALUES ('$2', 'run1', 'task1', 0, 'test', '$hash', 'running', 0, 0);"
}

# calls STORE ROLLOUT → the rollout's recorded calls as JSONL
calls() { "$FORGE_BIN/forge-proxy" --store "$1" --dump-rollout "$2"; }

# jq-free JSON checks: py 'expression over d' < json
py() { python3 -c "import json,sys; d=json.load(sys.stdin); r=($1); sys.exit(0 if r else 1)"; }
