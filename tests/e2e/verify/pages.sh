# Shared by forge-verify's page tests (verify_html, verify_learning,
# verify_scale); sourced after tests/support/e2e.sh.

# require_chromium NAME: sets $chromium, or says SKIP and exits 77.
require_chromium() {
  chromium=$(command -v chromium || command -v chromium-browser || true)
  if [ -z "$chromium" ]; then
    echo "$1: SKIP: no chromium (scripts/bootstrap.sh installs it)"
    exit 77
  fi
}

# record_runs FIXTURE: the fixture's rollouts recorded through a real
# forge-proxy --replay into $WORK/forge.db (FIXTURE exchanges DIR writes what
# the proxy serves; FIXTURE drive DIR URL STORE sends the calls); one check.
record_runs() {
  local port
  python3 "$1" exchanges "$WORK"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$FORGE_BIN/forge-proxy" --store "$WORK/forge.db" --replay "$WORK/exchanges.jsonl" --listen 127.0.0.1 \
    --port "$port" --health-interval 0 2>"$WORK/proxy.log" &
  recording_proxy=$!
  trap 'kill $recording_proxy 2>/dev/null; rm -rf "$WORK"' EXIT
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  python3 "$1" drive "$WORK" "http://127.0.0.1:$port" "$WORK/forge.db" && pass || fail "driving the proxy failed"
  kill "$recording_proxy"; wait "$recording_proxy" 2>/dev/null
}
