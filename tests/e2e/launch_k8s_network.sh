#!/usr/bin/env bash
# forge-launch --backend k8s against the fake cluster's real mode (a test
# double whose pods are Docker containers and whose NetworkPolicies are
# iptables rules in each pod's namespace): the proxy is a Service (here one
# without a selector whose Endpoints name a listener on the node); a task
# with allow_internet = false (proxy-only) is refused while no NetworkPolicy
# polices its pods' egress, and no pod is made; unenforced on request it
# really reaches another listener on the node; under the policy forge-launch
# writes and applies it reaches the proxy by its Service name and nothing
# else; --network none reaches nothing, not even the proxy. A pod never has
# its node's network. Talks only to 127.0.0.0/8 and the fake's node bridge.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
k8s_real_mode_or_skip launch_k8s_network
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
K8S_NS=forge-e2e
pids=()
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }

# On the node: the proxy (HTTP "pong") and another service the pods must not reach.
python3 - "$K8S_NODE_IP" >"$WORK/listeners.out" 2>&1 <<'PY' &
import http.server, sys, threading
for body in (b"pong from the proxy\n", b"other service\n"):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self, body=body):
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a): pass
    s = http.server.ThreadingHTTPServer((sys.argv[1], 0), H)
    print(s.server_address[1], flush=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
threading.Event().wait()
PY
pids+=($!)
for _ in $(seq 50); do [ "$(wc -l <"$WORK/listeners.out")" -ge 2 ] && break; sleep 0.1; done
pport=$(sed -n 1p "$WORK/listeners.out"); oport=$(sed -n 2p "$WORK/listeners.out")
[ -n "$oport" ] || { fail "listeners: $(cat "$WORK/listeners.out")"; finish; exit 1; }
cat >"$WORK/svc.json" <<JSON
[{"apiVersion":"v1","kind":"Service","metadata":{"name":"forge-proxy"},
  "spec":{"ports":[{"port":8080,"targetPort":$pport}]}},
 {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"forge-proxy"},
  "subsets":[{"addresses":[{"ip":"$K8S_NODE_IP","nodeName":"fake-node-1"}],"ports":[{"port":$pport}]}]}]
JSON
kc create "$WORK/svc.json" >/dev/null && pass || fail "create the proxy's Service: $(cat "$ERR")"
proxy="http://forge-proxy.$K8S_NS.svc.cluster.local:8080"

L() {
  "$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
    --store "$WORK/forge.db" --image forge-busybox:latest --retry-backoff 0.1 --proxy "$proxy" --command "$harness" "$@"
}
# busybox's static wget crashes on a pod's resolver set-up: nslookup (busybox's
# own DNS client) and nc instead.
harness='
get() { printf "GET / HTTP/1.0\r\n\r\n" | nc -w 3 "$1" "$2" 2>/dev/null | tail -1; }
host=${FORGE_PROXY_URL#http://}; host=${host%%:*}; port=${FORGE_PROXY_URL##*:}
ip=$(nslookup "$host" 2>/dev/null | awk "/^Address/ { a = \$NF } END { print a }")
echo "proxy at ${ip:-no address}"
body=$(get "$ip" "$port"); [ -n "$body" ] && echo "$body" || echo "proxy blocked"
body=$(get '"$K8S_NODE_IP $oport"'); [ "$body" = "other service" ] && echo "other REACHED" || echo "other blocked"
echo "interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\n" " ")"
true'

echo '{"id":"offline","instruction":"x","environment":{"allow_internet":false}}' >"$WORK/offline.jsonl"
echo '{"id":"online","instruction":"x"}' >"$WORK/online.jsonl"
logs() { jq -r '.logs.stdout' "$1"; }
pods_of() { kc get pods | jq --arg run "$1" '[.items[] | select(.metadata.labels["forge.run"] == $run)] | length'; }

echo "== allow_internet = false and no NetworkPolicy: refused before any pod"
L --run-id net-refused "$WORK/offline.jsonl" >"$OUT" 2>"$ERR"; rc=$?
[ "$rc" = 78 ] && pass || fail "refusal: exit $rc, want 78: $(cat "$ERR")"
grep -q "no NetworkPolicy in namespace $K8S_NS polices the egress of pods labelled forge.network=proxy-only (tasks with allow_internet = false: offline)" "$ERR" &&
  pass || fail "the refusal names the namespace, the label and the task: $(cat "$ERR")"
[ "$(pods_of net-refused)" = 0 ] && pass || fail "a refused run made pods"

echo "== unenforced on request: the pod reaches the other listener too (a warning says so)"
L --run-id net-unenforced --k8s-allow-unenforced-network "$WORK/offline.jsonl" >"$OUT" 2>"$ERR" && pass ||
  fail "unenforced run: $(cat "$ERR")"
grep -q "forge.network=proxy-only run with no NetworkPolicy" "$ERR" && pass || fail "no warning: $(cat "$ERR")"
logs "$OUT" | grep -qx "pong from the proxy" && pass || fail "unenforced: no proxy: $(cat "$OUT")"
logs "$OUT" | grep -qx "other REACHED" && pass || fail "unenforced: the other listener must be reachable: $(cat "$OUT")"

echo "== the policy forge-launch writes and applies: the proxy's Service, nothing else"
L --run-id net-enforced --k8s-apply-network-policies --k8s-network-policies "$WORK/policies.json" \
  "$WORK/offline.jsonl" >"$OUT" 2>"$ERR" && pass || fail "enforced run: $(cat "$ERR")"
[ "$(jq -r '.outcome' "$OUT")" = ok ] && pass || fail "outcome: $(cat "$OUT")"
logs "$OUT" | grep -qx "pong from the proxy" && pass || fail "enforced: the proxy by its Service name: $(cat "$OUT")"
logs "$OUT" | grep -qx "other blocked" && pass || fail "enforced: the other listener was reached: $(cat "$OUT")"
jq -e --arg cidr "$K8S_NODE_IP/32" --argjson port "$pport" '.kind == "List" and (.items | length) == 1 and
  .items[0].metadata.name == "forge-proxy-only" and
  .items[0].spec.podSelector.matchLabels["forge.network"] == "proxy-only" and
  .items[0].spec.egress[0].to == [{"ipBlock": {"cidr": $cidr}}] and
  .items[0].spec.egress[0].ports == [{"protocol": "TCP", "port": $port}] and
  .items[0].spec.egress[1].ports[0].port == 53' "$WORK/policies.json" >/dev/null && pass ||
  fail "written policies: $(cat "$WORK/policies.json")"
kc get networkpolicies forge-proxy-only >/dev/null && pass || fail "the policy was not applied"
echo "== applied again: replaced, not refused"
L --run-id net-again --k8s-apply-network-policies "$WORK/offline.jsonl" >"$OUT" 2>"$ERR" && pass || fail "second apply: $(cat "$ERR")"

echo "== --network none: not even the proxy"
L --run-id net-none --network none --k8s-apply-network-policies "$WORK/online.jsonl" >"$OUT" 2>"$ERR" && pass ||
  fail "none run: $(cat "$ERR")"
logs "$OUT" | grep -qx "proxy blocked" && pass || fail "none: the proxy was reached: $(cat "$OUT")"
logs "$OUT" | grep -qx "other blocked" && pass || fail "none: the other listener was reached: $(cat "$OUT")"
kc get networkpolicies forge-deny-egress >/dev/null && pass || fail "forge-deny-egress was not applied"

echo "== the default network with --proxy: the pod network, never the node's"
L --run-id net-online "$WORK/online.jsonl" >"$OUT" 2>"$ERR" && pass || fail "online run: $(cat "$ERR")"
logs "$OUT" | grep -qx "pong from the proxy" && pass || fail "online: no proxy: $(cat "$OUT")"
logs "$OUT" | grep "^interfaces:" | grep -q "fkb" && fail "the pod sees the node's bridge: $(cat "$OUT")" || pass

echo "== forge-verify on a held pod: a verifier that is true passes (the sweep runs as the pod's user)"
echo '{"id":"held","instruction":"x","verifier":{"kind":"command","command":"true"}}' >"$WORK/held.jsonl"
L --run-id net-held --hold "$WORK/held.jsonl" >"$WORK/held.out" 2>"$ERR" && pass || fail "held run: $(cat "$ERR")"
"$FORGE_BIN/forge-verify" --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  --store "$WORK/forge.db" "$WORK/held.out" >"$OUT" 2>"$ERR" && pass || fail "forge-verify: $(cat "$ERR" "$OUT")"
[ "$(jq -r '.verdict.outcome' "$OUT")" = passed ] && pass || fail "verdict: $(jq -c .verdict "$OUT")"
jq -e '.verdict.sweep.user | test("own")' "$OUT" >/dev/null && pass || fail "sweep: $(jq -c .verdict.sweep "$OUT")"

echo "== --proxy on a pod's loopback is refused on k8s"
"$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
  --store "$WORK/forge.db" --image forge-busybox:latest --proxy http://127.0.0.1:8080 --command true --run-id net-lo \
  "$WORK/online.jsonl" >"$OUT" 2>"$ERR"; rc=$?
[ "$rc" = 64 ] && grep -q "through a Service" "$ERR" && pass || fail "loopback proxy: exit $rc: $(cat "$ERR")"
finish
