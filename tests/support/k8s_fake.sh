# The fake Kubernetes API server (tests/fakes/k8s_api_server.py, a test
# double) for end-to-end tests, after `source "$FORGE_SRC/tests/support/e2e.sh"`.
#
#   k8s_real_mode_or_skip NAME   exits 77 (SKIP) unless real mode can run here:
#                                root, the Docker engine, ip, iptables, nsenter
#   start_k8s_fake MODE [ARGS]   starts it (HTTPS with --tls-cert/--tls-key); sets K8S_URL, K8S_TOKEN, K8S_PID, and
#                                K8S_NODE_IP (real mode: where host listeners
#                                must bind to be reachable from pods)
#   stop_k8s_fake                SIGTERM and wait (real mode removes its containers)
#   kc ARGS...                   tests/fakes/k8s_client.py against it, namespace $K8S_NS
#   k8s_fake_config JSON         POST /_fake/config

k8s_real_mode_or_skip() {
  local why=""
  [ "$(id -u)" -eq 0 ] || why="not root"
  docker info >/dev/null 2>&1 || why="${why:+$why, }no Docker engine"
  for tool in ip iptables-restore nsenter; do
    command -v "$tool" >/dev/null 2>&1 || why="${why:+$why, }no $tool"
  done
  if [ -n "$why" ]; then
    echo "SKIP: $1: the fake cluster's real mode cannot run here ($why)" >&2
    exit 77
  fi
}

start_k8s_fake() {
  local mode=$1 port="" scheme=http
  shift
  case " $* " in *" --tls-cert "*) scheme=https ;; esac
  K8S_TOKEN="e2e-$$-$RANDOM"
  python3 "$FORGE_SRC/tests/fakes/k8s_api_server.py" --mode "$mode" --token "$K8S_TOKEN" \
    --namespace "${K8S_NS:-forge-e2e}" "$@" >"$WORK/k8s-fake.out" 2>"$WORK/k8s-fake.err" &
  K8S_PID=$!
  for _ in $(seq 300); do
    port=$(awk '/^PORT /{print $2}' "$WORK/k8s-fake.out" 2>/dev/null)
    [ -n "$port" ] && break
    kill -0 "$K8S_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "the fake API server did not start: $(cat "$WORK/k8s-fake.err")" >&2
    return 1
  fi
  K8S_URL="$scheme://127.0.0.1:$port"
  K8S_NODE_IP=$(curl -kfsS "$K8S_URL/_fake/network" | jq -r '.node_ip // empty')
}

stop_k8s_fake() {
  if [ -n "${K8S_PID:-}" ]; then
    kill "$K8S_PID" 2>/dev/null || true
    wait "$K8S_PID" 2>/dev/null || true
    K8S_PID=""
  fi
}

kc() {
  python3 "$FORGE_SRC/tests/fakes/k8s_client.py" --server "$K8S_URL" --token "$K8S_TOKEN" \
    -n "${K8S_NS:-forge-e2e}" "$@"
}

k8s_fake_config() {
  curl -kfsS -X POST -d "$1" "$K8S_URL/_fake/config" >/dev/null
}

# k8s_e2e_cleanup: an EXIT trap that stops the fake, ends the processes
# listed in the array pids and removes $WORK.
k8s_e2e_cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
