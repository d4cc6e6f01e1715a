#!/usr/bin/env bash
# Harbor tasks run as Harbor runs them, against the real Docker engine: the
# corpus under tests/data/harbor/ through forge-launch's oracle harness and
# forge-verify. A verifier that apt-get installs its tool from a file:// apt
# source passes under forge's default capabilities (and fails under
# --cap-drop-all); the image's WORKDIR and ENTRYPOINT (a service it starts,
# an /etc/hosts entry) stay; environment.workdir overrides WORKDIR; env
# templates resolve from forge's own environment, and a missing one is an
# error naming it; a healthcheck is waited on; reward.json's named rewards;
# allow_internet = false under --proxy is proxy-only; a GPU task on an
# engine without GPUs is refused; held rollouts keep all their stdout.
# Talks only to 127.0.0.0/8.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker
[ "$(id -u)" -eq 0 ] || { echo "harbor_parity: needs root to build forge-apt:bookworm (debootstrap); skipped" >&2; exit 77; }
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
bash "$FORGE_SRC/scripts/make-apt-image.sh" || exit 1
LAUNCH="$FORGE_BIN/forge-launch"
VERIFY="$FORGE_BIN/forge-verify"
run="harbor-parity-$$"
corpus="$FORGE_SRC/tests/data/harbor"
pids=()
source "${FORGE_SRC:?}/tests/support/docker_runs.sh"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  remove_run_containers "$run"
  rm -rf "$WORK"
}
trap cleanup EXIT
L() { "$LAUNCH" --backend docker --store "$WORK/forge.db" --retry-backoff 0.1 "$@"; }
V() { "$VERIFY" run --store "$WORK/forge.db" "$@"; }

# Runs the oracle on the named corpus tasks (held), then forge-verify; the
# verdicts land in $WORK/<label>.verdicts. Extra forge-launch flags after --.
oracle() {
  local label=$1; shift
  local tasks=() flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do tasks+=("$1"); shift; done
  [ "${1:-}" = -- ] && { shift; flags=("$@"); }
  rm -rf "$WORK/$label"; mkdir -p "$WORK/$label"
  for t in "${tasks[@]}"; do cp -r "$corpus/$t" "$WORK/$label/"; done
  L --run-id "$run-$label" --harness oracle --hold "${flags[@]}" "$WORK/$label" \
    >"$WORK/$label.rollouts" 2>"$WORK/$label.err"
  local task_flags=()
  for t in "${tasks[@]}"; do task_flags+=(--tasks "$WORK/$label/$t"); done
  V "${task_flags[@]}" <"$WORK/$label.rollouts" >"$WORK/$label.verdicts" 2>"$WORK/$label.verr"
  "$LAUNCH" --backend docker gc --run-id "$run-$label" >/dev/null 2>&1
}
reward_of() { jq -r --arg t "$2" 'select(.task_id == $t) | .verdict.reward' "$WORK/$1.verdicts"; }

echo "== an apt-get verifier passes under forge's default capabilities"
oracle apt apt-verifier
[ "$(reward_of apt apt-verifier)" = 1 ] && pass ||
  fail "apt verifier reward '$(reward_of apt apt-verifier)': $(jq -c .verdict "$WORK/apt.verdicts") $(tail -3 "$WORK/apt.err")"
oracle aptlocked apt-verifier -- --cap-drop-all
[ "$(reward_of aptlocked apt-verifier)" = 0 ] && pass ||
  fail "under --cap-drop-all apt-get should fail: $(jq -c .verdict "$WORK/aptlocked.verdicts")"

echo "== the held sandbox: default capabilities, no-new-privileges, allow_internet = false is NetworkMode none"
L --run-id "$run-inspect" --harness oracle --hold "$corpus/apt-verifier" >"$WORK/inspect.out" 2>"$ERR"
id=$(jq -r .sandbox.id "$WORK/inspect.out")
inspect=$(docker inspect "$id")
[ "$(jq -c '.[0].HostConfig.CapDrop' <<<"$inspect")" = null ] && pass || fail "CapDrop $(jq -c '.[0].HostConfig.CapDrop' <<<"$inspect")"
[ "$(jq -c '.[0].HostConfig.SecurityOpt' <<<"$inspect")" = '["no-new-privileges"]' ] && pass || fail "SecurityOpt"
[ "$(jq -r '.[0].HostConfig.NetworkMode' <<<"$inspect")" = none ] && pass || fail "NetworkMode"
"$LAUNCH" --backend docker gc --run-id "$run-inspect" >/dev/null 2>&1

echo "== WORKDIR, environment.workdir, an ENTRYPOINT that starts a service, a healthcheck, reward.json"
oracle shapes single-container workdir workdir-override entrypoint-service multi-reward
for t in single-container workdir workdir-override entrypoint-service multi-reward; do
  [ "$(reward_of shapes $t)" = 1 ] && pass ||
    fail "$t: reward '$(reward_of shapes $t)': $(jq -c "select(.task_id == \"$t\")" "$WORK/shapes.verdicts") $(cat "$WORK/shapes.err")"
done
[ "$(jq -r 'select(.task_id == "multi-reward") | .verdict.rewards.style' "$WORK/shapes.verdicts")" = 0.5 ] && pass ||
  fail "multi-reward: named rewards $(jq -c 'select(.task_id == "multi-reward") | .verdict' "$WORK/shapes.verdicts")"

echo "== env templates come from forge's environment; a missing one is an error naming it"
FORGE_CORPUS_GREETING="hello from the host" oracle env env-templates
[ "$(reward_of env env-templates)" = 1 ] && pass ||
  fail "env-templates reward '$(reward_of env env-templates)': $(jq -c .verdict "$WORK/env.verdicts") $(cat "$WORK/env.err")"
jq -e '.task.environment.env.GREETING == "${FORGE_CORPUS_GREETING}"' "$WORK/env.rollouts" >/dev/null && pass ||
  fail "the record must keep the template, not the value"
(unset FORGE_CORPUS_GREETING; oracle envmissing env-templates)
[ "$(jq -r .outcome "$WORK/envmissing.rollouts")" = infra_error ] && pass || fail "missing variable: $(cat "$WORK/envmissing.rollouts")"
grep -q "environment.env.GREETING: environment variable 'FORGE_CORPUS_GREETING' not found in host environment" \
  "$WORK/envmissing.err" && pass || fail "missing variable not named: $(cat "$WORK/envmissing.err")"
[ "$(jq -r .infra_retries "$WORK/envmissing.rollouts")" = 0 ] && pass || fail "a missing variable is not retried"

echo "== a task needing a GPU on an engine without one is refused, not run without"
if docker info --format '{{json .Runtimes}}' | grep -q nvidia; then
  echo "(this engine has the NVIDIA runtime: GPU refusal not checked)"
else
  oracle gpu gpu
  [ "$(jq -r .error_kind "$WORK/gpu.rollouts")" = no_gpu ] && pass || fail "gpu: $(cat "$WORK/gpu.rollouts")"
  grep -q "environment.gpus = 1" "$WORK/gpu.err" && pass || fail "gpu error: $(cat "$WORK/gpu.err")"
fi

echo "== allow_internet = false under --proxy is proxy-only: the proxy and nothing else"
python3 - "$WORK/proxy.port" <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"proxy-answer\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
pids+=($!)
for _ in $(seq 100); do [ -s "$WORK/proxy.port" ] && break; sleep 0.1; done
proxy="http://127.0.0.1:$(cat "$WORK/proxy.port")"
printf '%s\n' '{"id":"offline","instruction":"x","environment":{"allow_internet":false}}' \
  '{"id":"online","instruction":"x"}' >"$WORK/net.jsonl"
L --run-id "$run-net" --image forge-busybox:latest --proxy "$proxy" --hold \
  --command 'wget -q -O- "$FORGE_PROXY_URL/x"; cat /proc/net/dev | grep -c ":" ' "$WORK/net.jsonl" >"$WORK/net.out" 2>"$ERR"
off=$(jq -r 'select(.task_id == "offline") | .sandbox.id' "$WORK/net.out")
on=$(jq -r 'select(.task_id == "online") | .sandbox.id' "$WORK/net.out")
[ "$(docker inspect -f '{{.HostConfig.NetworkMode}}' "$off")" = none ] && pass || fail "offline task NetworkMode"
[ "$(docker inspect -f '{{.HostConfig.NetworkMode}}' "$on")" = host ] && pass || fail "online task NetworkMode"
jq -e 'select(.task_id == "offline") | .logs.stdout | startswith("proxy-answer")' "$WORK/net.out" >/dev/null && pass ||
  fail "offline task did not reach the proxy: $(jq -c 'select(.task_id == "offline") | .logs' "$WORK/net.out")"
"$LAUNCH" --backend docker gc --run-id "$run-net" >/dev/null 2>&1

echo "== a killed launcher's leftovers: a container never started, and one still running, of the run"
rollout_id() { printf '%s\n%s\n%s' "$1" "$2" "$3" | sha256sum | cut -c1-24; }
printf '%s\n' '{"id":"left-created","instruction":"x"}' '{"id":"left-running","instruction":"x"}' >"$WORK/left.jsonl"
labels=(--label forge.managed=1 --label "forge.run=$run-left")
docker create --name "forge-$(rollout_id "$run-left" left-created 0)" "${labels[@]}" forge-busybox:latest sleep 600 >/dev/null
docker create "${labels[@]}" forge-busybox:latest sleep 600 >/dev/null  # another rollout's, never started
docker run -d --rm --network none --name "forge-$(rollout_id "$run-left" left-running 0)" "${labels[@]}" \
  forge-busybox:latest sleep 600 >/dev/null
expect_exit 0 "rerun over a killed run's containers" \
  L --run-id "$run-left" --image forge-busybox:latest --command 'echo again' "$WORK/left.jsonl"
[ "$(jq -r .outcome "$OUT" | sort -u)" = ok ] && pass || fail "rerun outcomes: $(cat "$OUT") $(cat "$ERR")"
[ -z "$(docker ps -aq --filter "label=forge.run=$run-left")" ] && pass ||
  fail "leftovers stay: $(docker ps -a --filter "label=forge.run=$run-left" --format '{{.Names}} {{.Status}}')"

echo "== held rollouts keep all of the harness's stdout"
echo '{"id":"echo","instruction":"x"}' >"$WORK/echo.jsonl"
L --run-id "$run-echo" --image forge-busybox:latest --hold -n 24 -j 8 --command 'echo a; echo b; echo c' \
  "$WORK/echo.jsonl" >"$WORK/echo.out" 2>"$ERR"
[ "$(jq -r .logs.stdout "$WORK/echo.out" | grep -c '^c$')" = 24 ] && pass ||
  fail "stdout cut: $(jq -c .logs.stdout "$WORK/echo.out" | sort | uniq -c)"
[ "$(jq -r '.logs.stdout == "a\nb\nc\n"' "$WORK/echo.out" | sort -u)" = true ] && pass || fail "stdout not exactly a b c"
"$LAUNCH" --backend docker gc --run-id "$run-echo" >/dev/null 2>&1
finish
