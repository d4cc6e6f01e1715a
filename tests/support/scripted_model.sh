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
