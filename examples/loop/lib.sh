# Shell helpers of the loop (examples/loop/run.sh, tests/e2e/loop_mechanics.sh).
# The caller sets: here (this directory), out (its output directory), bin (the
# forge binaries), py (/usr/bin/python3), jobs (rollouts at once).
# shellcheck shell=bash
pids=()
on_exit=:  # a caller's own cleanup, run after the servers are stopped
cleanup() {  # the servers are waited for, so their CPU time counts in the caller's (bash's `times`)
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  eval "$on_exit"
}
trap cleanup EXIT

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {  # url
  for _ in $(seq 200); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "loop: nothing answers at $1" >&2; exit 69
}
start_server() {  # name args... -> sets server_url
  rm -f "$out/$1.port"
  "$py" "$here/policy_server.py" --port-file "$out/$1.port" "${@:2}" 2>>"$out/$1.log" &
  pids+=($!)
  for _ in $(seq 200); do [ -s "$out/$1.port" ] && break; sleep 0.1; done
  server_url="http://127.0.0.1:$(cat "$out/$1.port")"
  wait_for "$server_url/healthz"
}
start_proxy() {  # store upstream -> sets proxy_url
  local port; port=$(free_port)
  "$bin/forge-proxy" --store "$1" --upstream "$2" --listen 127.0.0.1 --port "$port" --health-interval 0 \
    2>>"$out/proxy.log" &
  pids+=($!)
  proxy_url="http://127.0.0.1:$port"
  wait_for "$proxy_url/healthz"
}
admin() { curl -fsS -X POST "$policy_proxy/admin/$1" >/dev/null; }

# rollouts RUN TASKS N PROXY STORE: forge-launch then forge-verify, verdicts in runs/RUN.verdicts.jsonl.
rollouts() {
  local run=$1 tasks=$2 n=$3 proxy=$4 store=$5 status=0
  "$bin/forge-launch" --store "$store" --backend local --bubblewrap --harness react --proxy "$proxy" \
    --run-id "$run" -n "$n" -j "$jobs" --hold --agent-timeout 30 "$tasks" \
    >"$out/runs/$run.rollouts.jsonl" 2>>"$out/launch.log"
  "$bin/forge-verify" run --store "$store" --tasks "$tasks" -j "$jobs" \
    <"$out/runs/$run.rollouts.jsonl" >"$out/runs/$run.verdicts.jsonl" 2>>"$out/verify.log" || status=$?
  [ "$status" -le 1 ] || { echo "loop: forge-verify exit $status (see $out/verify.log)" >&2; exit "$status"; }
  "$bin/forge-launch" --backend local gc --run-id "$run" >/dev/null 2>&1 || true
}
pass_at_1() {  # verdicts
  "$bin/forge-verify" report --json -k 1 "$1" | jq -r '.overall.pass_at_k["1"]'
}
# load WEIGHTS VERSION [TEACHER]: pause, drain, swap the weights (and set the
# server's teacher mode, true or false), bump the version, resume.
load() {
  admin pause
  admin drain
  curl -fsS -X POST "$policy_url/admin/load-weights" -d "{\"path\":\"$1\"${3:+,\"teacher\":$3}}" >/dev/null
  admin "policy-version?version=$2"
  admin resume
}
