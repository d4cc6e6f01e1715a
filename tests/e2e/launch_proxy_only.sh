#!/usr/bin/env bash
# forge-launch --network proxy-only against the real Docker engine: the
# sandbox has only its own loopback (NetworkMode none), yet its harness's
# base URL http://127.0.0.1:PORT reaches a proxy on the host's loopback with
# the rollout's secret — through forge-relay in the sandbox, a bind-mounted
# unix socket and forge-launch's host relay — while a second host loopback
# port that is listening is not reachable, and --network none reaches
# nothing. One-shot and held (exec'd) sandboxes; a megabyte each way; a relay
# that cannot start; the real forge-proxy recording the call; the local
# backend; bad input. Talks only to 127.0.0.0/8.
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
source "$SRC/tests/support/docker_runs.sh"
docker_launch_test e2e-po
mkdir -p "$work/tmp"
# TMPDIR: where the host relay's socket directory goes, checked for leftovers.
L() { TMPDIR="$work/tmp" "$LAUNCH" "${common[@]}" "$@"; }

# The fake proxy: records "<Authorization> <path>" per request; /big sends
# 1 MiB; POST /echo sends the body back.
python3 - "$work/proxy.port" "$work/seen" <<'PY' &
import http.server, sys
port_file, seen = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def record(self):
        with open(seen, "a") as f:
            f.write(self.headers.get("Authorization", "-") + " " + self.path + "\n")
    def reply(self, body):
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.record()
        self.reply(bytes(range(256)) * 4096 if self.path.endswith("/big") else b"pong\n")
    def do_POST(self):
        self.record()
        self.reply(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
pids+=($!)
# A second service on the host's loopback that the sandbox must not reach.
python3 - "$work/other.port" "$work/other.seen" <<'PY' &
import http.server, sys
port_file, seen = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        open(seen, "a").write(self.path + "\n")
        self.send_response(200); self.send_header("Content-Length", "6"); self.end_headers()
        self.wfile.write(b"other\n")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
pids+=($!)
for _ in $(seq 100); do [[ -s "$work/proxy.port" && -s "$work/other.port" ]] && break; sleep 0.1; done
port="$(cat "$work/proxy.port")"; other="$(cat "$work/other.port")"
proxy="http://127.0.0.1:$port"
# The other service is really there: the host reaches it (one recorded hit).
[[ "$(curl -s "http://127.0.0.1:$other/host-probe")" == other ]] || fail "the other service is not listening"

# The harness: the proxy with its key, 1 MiB down, 1 MiB up and back (cmp), the
# other port, and which interfaces the sandbox has.
harness='
wget -q -O - --header "Authorization: Bearer $OPENAI_API_KEY" "$OPENAI_BASE_URL/ping?rollout=$FORGE_ROLLOUT_ID"
wget -q -O /tmp/big --header "Authorization: Bearer $OPENAI_API_KEY" "$OPENAI_BASE_URL/big" && echo "big $(wc -c </tmp/big)"
head -c 786432 /dev/urandom | base64 >/tmp/up  # text: busybox wget posts up to the first NUL
wget -q -O /tmp/down --header "Authorization: Bearer $OPENAI_API_KEY" --post-file=/tmp/up "$OPENAI_BASE_URL/echo"
cmp -s /tmp/up /tmp/down && echo "echo same"
if wget -q -O - "http://127.0.0.1:'"$other"'/from-sandbox" 2>/dev/null; then echo "other REACHED"; else echo "other blocked"; fi
echo "interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\n" " ")"
'

echo "== one-shot sandboxes: the proxy with the secret, a MiB each way, nothing else"
for i in 1 2 3; do echo "{\"id\":\"po$i\",\"instruction\":\"x\"}"; done >"$work/tasks.jsonl"
L --run-id "$run_prefix-one" -j 3 --network proxy-only --proxy "$proxy" --command "$harness" \
  "$work/tasks.jsonl" >"$work/one.out" 2>"$work/one.err" || fail "launch failed: $(cat "$work/one.err")"
[[ "$(jq -s 'length' "$work/one.out")" == 3 ]] || fail "3 records expected"
[[ "$(jq -s '[.[] | select(.outcome == "ok")] | length' "$work/one.out")" == 3 ]] || fail "outcomes: $(cat "$work/one.out")"
for i in 0 1 2; do
  stdout="$(jq -s -r ".[$i].logs.stdout" "$work/one.out")"
  for want in pong "big 1048576" "echo same" "other blocked" "interfaces: lo "; do
    grep -qxF "$want" <<<"$stdout" || fail "rollout $i: no '$want' in: $stdout"
  done
done
! grep -q "REACHED" "$work/one.out" || fail "the sandbox reached the other loopback service"
[[ "$(cat "$work/other.seen")" == /host-probe ]] || fail "the other service saw: $(cat "$work/other.seen")"
# Each rollout's calls carry its own secret; the store has each secret's hash.
[[ "$(grep -c ' /v1/ping?rollout=' "$work/seen")" == 3 ]] || fail "proxy saw: $(cat "$work/seen")"
while read -r bearer key path; do
  rollout="${path#/v1/ping?rollout=}"
  [[ "$bearer" == Bearer && "$key" == forge-* ]] || fail "no secret on $path"
  stored="$(sqlite3 "$work/forge.db" "select secret_hash from rollouts where id='$rollout'")"
  [[ "$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)" == "$stored" ]] || fail "secret of $rollout not the stored one"
  ! grep -q "$key" "$work/one.out" || fail "the secret leaked into the records"
done < <(grep ' /v1/ping?rollout=' "$work/seen")
[[ "$(grep -c ' /v1/echo$' "$work/seen")" == 3 ]] || fail "echo calls"
[[ -z "$(ls -A "$work/tmp")" ]] || fail "the host relay's directory was left: $(ls "$work/tmp")"
[[ "$(docker ps -aq --filter "label=forge.run=$run_prefix-one" | wc -l)" == 0 ]] || fail "containers left"

echo "== the real forge-proxy: the sandbox's call is recorded under its rollout"
python3 "$SRC/tests/fake_upstream/fake_upstream.py" --port-file "$work/up.port" --log "$work/up.log" &
pids+=($!)
for _ in $(seq 100); do [[ -s "$work/up.port" ]] && break; sleep 0.1; done
fp_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$BIN/forge-proxy" --store "$work/forge.db" --port "$fp_port" --health-interval 0 \
  --upstream "http://127.0.0.1:$(cat "$work/up.port")/v1" 2>"$work/fp.err" &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$fp_port/healthz" && break; sleep 0.1; done
echo '{"id":"fp","instruction":"x"}' >"$work/fp.jsonl"
L --run-id "$run_prefix-fp" --network proxy-only --proxy "http://127.0.0.1:$fp_port" \
  --command 'wget -q -O - --header "Authorization: Bearer $OPENAI_API_KEY" --header "Content-Type: application/json" --post-data "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$OPENAI_BASE_URL/chat/completions"' \
  "$work/fp.jsonl" >"$work/fp.out" 2>"$work/fp.err2" || fail "launch against forge-proxy: $(cat "$work/fp.err2")"
[[ "$(jq -r .outcome "$work/fp.out")" == ok ]] || fail "forge-proxy rollout: $(cat "$work/fp.out")"
grep -q "hello from fake!" <<<"$(jq -r .logs.stdout "$work/fp.out")" || fail "no answer: $(jq -r .logs "$work/fp.out")"
recorded="$("$BIN/forge-proxy" --store "$work/forge.db" --dump-rollout "$(jq -r .rollout_id "$work/fp.out")")"
[[ "$(wc -l <<<"$recorded")" == 1 ]] || fail "forge-proxy recorded: $recorded"
[[ "$(jq -r .http_status <<<"$recorded")" == 200 ]] || fail "recorded call: $recorded"

echo "== a held sandbox (exec path): NetworkMode none, relay and socket mounted read-only"
echo '{"id":"held","instruction":"x"}' >"$work/held.jsonl"
L --run-id "$run_prefix-held" --hold --network proxy-only --proxy "$proxy" \
  --command 'wget -q -O - --header "Authorization: Bearer $OPENAI_API_KEY" "$OPENAI_BASE_URL/held"; if wget -q -O - "http://127.0.0.1:'"$other"'/from-held" 2>/dev/null; then echo REACHED; else echo blocked; fi' \
  "$work/held.jsonl" >"$work/held.out" 2>"$work/held.err" || fail "held launch: $(cat "$work/held.err")"
[[ "$(jq -r .outcome "$work/held.out")" == ok ]] || fail "held outcome $(cat "$work/held.out")"
[[ "$(jq -r .logs.stdout "$work/held.out")" == $'pong\nblocked' ]] || fail "held stdout: $(jq -r .logs.stdout "$work/held.out")"
id="$(jq -r .sandbox.id "$work/held.out")"
inspect="$(docker inspect "$id")"
[[ "$(jq -r '.[0].HostConfig.NetworkMode' <<<"$inspect")" == none ]] || fail "NetworkMode"
[[ "$(jq -r '[.[0].Mounts[] | select(.Destination == "/forge/bin/forge-relay") | .RW] | .[0]' <<<"$inspect")" == false ]] || fail "relay binary not mounted read-only"
[[ "$(jq -r '[.[0].Mounts[] | select(.Destination == "/forge/run") | .RW] | .[0]' <<<"$inspect")" == false ]] || fail "socket dir not mounted read-only"
! grep -q "from-held" "$work/other.seen" || fail "the held sandbox reached the other service"
# forge-launch has exited; forge-verify will copy a task's tests in with
# Docker's archive API, which fails ("Could not find the file") when a
# bind-mount source is gone: the relay's directory stays, without its socket.
relay_dir="$(jq -r '.[0].Mounts[] | select(.Destination == "/forge/run") | .Source' <<<"$inspect")"
[[ -d "$relay_dir" && ! -e "$relay_dir/proxy.sock" ]] || fail "held run's relay directory: $(ls -la "$relay_dir" 2>&1)"
[[ "$(cat "$relay_dir/held-until")" -gt "$(date +%s)" ]] || fail "held-until: $(cat "$relay_dir/held-until")"
echo probe >"$work/probe.txt"
docker cp "$work/probe.txt" "$id:/tmp/probe.txt" 2>"$work/cp.err" || fail "cannot copy into the held sandbox: $(cat "$work/cp.err")"
[[ "$(docker exec "$id" cat /tmp/probe.txt)" == probe ]] || fail "the copied file is not in the held sandbox"
"$LAUNCH" --backend docker gc --run-id "$run_prefix-held" 2>/dev/null
[[ -d "$relay_dir" ]] || fail "gc removed a relay directory before its held-until time"
rm -rf "$relay_dir"

echo "== a non-root user in the sandbox reaches the proxy too (socket 0666, directory 0755)"
L --run-id "$run_prefix-nobody" --user 65534 --network proxy-only --proxy "$proxy" \
  --command 'id -u; wget -q -O - --header "Authorization: Bearer $OPENAI_API_KEY" "$OPENAI_BASE_URL/nobody"' \
  "$work/held.jsonl" >"$work/nobody.out" 2>"$work/nobody.err" || fail "non-root launch: $(cat "$work/nobody.err")"
[[ "$(jq -r .logs.stdout "$work/nobody.out")" == $'65534\npong' ]] || fail "non-root: $(jq -r .logs "$work/nobody.out")"

echo "== the local backend: a network namespace of its own, the relay from the host"
TMPDIR="$work/tmp" "$LAUNCH" --backend local --store "$work/forge.db" --run-id "$run_prefix-local" \
  --network proxy-only --proxy "$proxy" \
  --command 'curl -s -H "Authorization: Bearer $OPENAI_API_KEY" "$OPENAI_BASE_URL/local-ping"
if curl -s "http://127.0.0.1:'"$other"'/from-local"; then echo REACHED; else echo blocked; fi
echo "interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\n" " ")"' \
  "$work/held.jsonl" >"$work/local.out" 2>"$work/local.err" || fail "local launch: $(cat "$work/local.err")"
[[ "$(jq -r .outcome "$work/local.out")" == ok ]] || fail "local outcome $(cat "$work/local.out")"
[[ "$(jq -r .logs.stdout "$work/local.out")" == $'pong\nblocked\ninterfaces: lo ' ]] || fail "local stdout: $(jq -r .logs.stdout "$work/local.out")"
grep -q "^Bearer forge-.* /v1/local-ping$" "$work/seen" || fail "the proxy did not see the local rollout's key"
! grep -q "from-local" "$work/other.seen" || fail "the local sandbox reached the other service"
[[ -z "$(ls -A "$work/tmp" | grep forge-relay || true)" ]] || fail "the host relay's directory was left"

echo "== the local backend under bubblewrap: the same, with the host read-only and /tmp private"
if bwrap --ro-bind / / true 2>/dev/null; then
  outside="/var/tmp/forge-e2e-bwrap-$$"  # not under /tmp: the sandbox has a /tmp of its own
  TMPDIR="$work/tmp" "$LAUNCH" --backend local --bubblewrap --store "$work/forge.db" --run-id "$run_prefix-bwrap" \
    --network proxy-only --proxy "$proxy" \
    --command 'curl -s -H "Authorization: Bearer $OPENAI_API_KEY" "$OPENAI_BASE_URL/bwrap-ping"
if curl -s "http://127.0.0.1:'"$other"'/from-bwrap"; then echo REACHED; else echo blocked; fi
if touch "'"$outside"'" 2>/dev/null; then echo WROTE; else echo read-only; fi' \
    "$work/held.jsonl" >"$work/bwrap.out" 2>"$work/bwrap.err" || fail "bwrap launch: $(cat "$work/bwrap.err")"
  [[ "$(jq -r .logs.stdout "$work/bwrap.out")" == $'pong\nblocked\nread-only' ]] || fail "bwrap stdout: $(jq -r .logs "$work/bwrap.out")"
  [[ ! -e "$outside" ]] || { rm -f "$outside"; fail "the bubblewrapped harness wrote outside its sandbox"; }
  grep -q "^Bearer forge-.* /v1/bwrap-ping$" "$work/seen" || fail "the proxy did not see the bubblewrapped rollout's key"
else
  echo "skipped: bwrap is not installed or cannot make namespaces here"
fi

echo "== --network none with the same proxy reaches nothing"
before="$(wc -l <"$work/seen")"
L --run-id "$run_prefix-none" --network none --proxy "$proxy" \
  --command 'if wget -q -O - "$OPENAI_BASE_URL/none" 2>/dev/null; then echo REACHED; else echo unreachable; fi' \
  "$work/held.jsonl" >"$work/none.out" 2>/dev/null
[[ "$(jq -r .logs.stdout "$work/none.out")" == unreachable ]] || fail "--network none: $(jq -r .logs.stdout "$work/none.out")"
[[ "$(wc -l <"$work/seen")" == "$before" ]] || fail "the proxy was reached under --network none"

echo "== a relay that cannot start: infra_error naming it, the harness never runs"
printf '#!/bin/sh\necho "forge-relay: cannot listen here" >&2\nexit 69\n' >"$work/bad-relay"
chmod +x "$work/bad-relay"
set +e
L --run-id "$run_prefix-bad" --network proxy-only --proxy "$proxy" --relay-binary "$work/bad-relay" \
  --command 'wget -q -O - "$OPENAI_BASE_URL/should-not-run"' "$work/held.jsonl" >"$work/bad.out" 2>"$work/bad.err"
rc=$?
set -e
[[ $rc == 69 ]] || fail "bad relay exit $rc: $(cat "$work/bad.err")"
[[ "$(jq -r .outcome "$work/bad.out")" == infra_error ]] || fail "bad relay outcome $(cat "$work/bad.out")"
grep -q "relay did not start: forge-relay: cannot listen here" <<<"$(jq -r .error "$work/bad.out")" || fail "bad relay error: $(jq -r .error "$work/bad.out")"
[[ "$(jq -r .infra_retries "$work/bad.out")" == 0 ]] || fail "a relay that cannot start is not retried"
! grep -q should-not-run "$work/seen" || fail "the harness ran without its relay"

echo "== bad input: clear errors before any sandbox"
expect() {  # expect CODE TEXT args...
  local code="$1" text="$2"; shift 2
  set +e
  "$LAUNCH" --store "$work/forge.db" --image "$IMAGE" --run-id "$run_prefix-usage" --command true "$@" \
    "$work/held.jsonl" >"$work/usage.out" 2>"$work/usage.err"
  local rc=$?
  set -e
  [[ $rc == "$code" ]] || fail "$*: exit $rc, wanted $code: $(cat "$work/usage.err")"
  grep -qF -- "$text" "$work/usage.err" || fail "$*: no '$text' in: $(cat "$work/usage.err")"
  [[ ! -s "$work/usage.out" ]] || fail "$*: records written"
}
expect 64 "--network proxy-only needs --proxy" --network proxy-only
expect 64 "127.0.0.0/8" --network proxy-only --proxy http://10.1.2.3:8080
expect 64 "127.0.0.0/8" --network proxy-only --proxy http://localhost:$port
expect 64 "expected an http:// or https:// URL" --network proxy-only --proxy unix:/tmp/proxy.sock
expect 78 "no executable forge-relay at $work/missing" --network proxy-only --proxy "$proxy" --relay-binary "$work/missing"
[[ "$(docker ps -aq --filter "label=forge.run=$run_prefix-usage" | wc -l)" == 0 ]] || fail "a sandbox was made"
help="$("$LAUNCH" --help)"
grep -q "proxy-only" <<<"$help" || fail "--help does not name proxy-only"
grep -q "proxy-only" "$SRC/man/forge-launch.1" || fail "the man page does not name proxy-only"
echo "launch_proxy_only: ok"
