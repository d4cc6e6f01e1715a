# The scripted model behind forge-proxy, for the real-harness tests: starts
# tests/fake_upstream/fake_upstream.py playing DIR/scenario.json (its log in
# DIR/fake.log) and forge-proxy in front of it recording to DIR/forge.db (its
# stderr in DIR/proxy.err); sets $proxy to the proxy's URL and adds both
# processes to the caller's pids array. Arguments after DIR go to forge-proxy.
# The caller defines fail().

# start_scripted_model DIR [forge-proxy flags...]
start_scripted_model() {
  local dir=$1 port
  shift
  python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --port-file "$dir/fake.port" \
    --log "$dir/fake.log" --scenario "$dir/scenario.json" &
  pids+=($!)
  for _ in $(seq 100); do [[ -s "$dir/fake.port" ]] && break; sleep 0.1; done
  [[ -s "$dir/fake.port" ]] || fail "fake upstream did not start"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$FORGE_BIN/forge-proxy" --store "$dir/forge.db" --port "$port" --health-interval 0 \
    --upstream "http://127.0.0.1:$(cat "$dir/fake.port")" "$@" 2>"$dir/proxy.err" &
  pids+=($!)
  proxy="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -s -o /dev/null "$proxy/healthz" && break; sleep 0.1; done
}

# harness_test NAME RUN BACKEND LOG...: the opening of a test that runs a
# harness through forge-launch: $work (a fresh /tmp/NAME.XXXXXX), $run = RUN
# and pids=(). On exit every pid is killed and waited for, the run's
# sandboxes are collected (forge-launch --backend BACKEND gc; the local
# backend's root is $work/local) and $work is removed. fail MESSAGE prints
# the last lines of each LOG in $work that is not empty, and exits 1.
harness_test() {
  work="$(mktemp -d "/tmp/$1.XXXXXX")"
  run=$2
  HARNESS_TEST_BACKEND=$3
  shift 3
  HARNESS_TEST_LOGS=("$@")
  pids=()
  trap harness_test_cleanup EXIT
  fail() {
    echo "FAIL: $*" >&2
    local f
    for f in "${HARNESS_TEST_LOGS[@]}"; do
      [[ -s "$work/$f" ]] && { echo "--- $f" >&2; tail -20 "$work/$f" >&2; }
    done
    exit 1
  }
}

harness_test_cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  FORGE_LOCAL_ROOT="$work/local" "$FORGE_BIN/forge-launch" --backend "$HARNESS_TEST_BACKEND" gc --run-id "$run" \
    >/dev/null 2>&1 || true
  rm -rf "$work"
}
