#!/usr/bin/env bash
# The fake Kubernetes API server's real mode (tests/fakes/k8s_api_server.py,
# a test double): pods are Docker containers. An init container copies a
# script into an emptyDir that the main container runs, and its termination
# message reaches the watch; a native sidecar shares localhost and its
# startupProbe gates the container; env, securityContext and limits reach the
# real container; logs; exec (v5 and v4) into it; a NetworkPolicy that denies
# egress really blocks a connection to a listener on the node, and one that
# allows the Service's endpoint lets it through by ClusterIP and by name while
# other ports stay blocked; hostNetwork refused by Pod Security; image pulls
# that fail; activeDeadlineSeconds; a graceful delete removes the containers;
# kubectl (when installed) drives it too.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
k8s_real_mode_or_skip k8s_fake_pods
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || { echo "no forge-busybox image" >&2; exit 1; }
IMAGE=forge-busybox:latest
K8S_NS=forge-e2e
listeners=""
cleanup() {
  [ -n "$listeners" ] && kill "$listeners" 2>/dev/null
  stop_k8s_fake
  rm -rf "$WORK"
}
trap cleanup EXIT
# HTTPS, as every real API server: kubectl sends no token over plain HTTP.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/tls.key" -out "$WORK/tls.crt" -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 || { fail "openssl"; finish; exit 1; }
start_k8s_fake real --tls-cert "$WORK/tls.crt" --tls-key "$WORK/tls.key" || { fail "start"; finish; exit 1; }
[ -n "$K8S_NODE_IP" ] && pass || fail "no node IP from /_fake/network"

echo "== the node: one Node object whose InternalIP is where host listeners bind"
kc get nodes >"$OUT" && pass || fail "list nodes"
[ "$(jq -r '.items[0].status.addresses[] | select(.type=="InternalIP") | .address' "$OUT")" = "$K8S_NODE_IP" ] && pass ||
  fail "InternalIP: $(jq -c '.items[0].status.addresses' "$OUT")"

echo "== an init container copies a script into an emptyDir; the container runs it; its termination message is in the watch"
rv=$(kc get pods | jq -r .metadata.resourceVersion)
kc watch pods --rv "$rv" --timeout 40 -l app=runner >"$WORK/watch.jsonl" &
watcher=$!
cat >"$WORK/runner.json" <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"runner","labels":{"app":"runner"}},
 "spec":{"restartPolicy":"Never","volumes":[{"name":"shared","emptyDir":{}}],
  "initContainers":[{"name":"copy","image":"$IMAGE","imagePullPolicy":"IfNotPresent",
    "command":["sh","-c","printf '#!/bin/sh\\\\necho ran as \$(id -u) with \$GREETING\\\\necho it failed on purpose > /dev/termination-log\\\\nexit 3\\\\n' > /shared/run.sh && chmod +x /shared/run.sh"],
    "volumeMounts":[{"name":"shared","mountPath":"/shared"}]}],
  "containers":[{"name":"main","image":"$IMAGE","imagePullPolicy":"IfNotPresent","command":["/shared/run.sh"],
    "env":[{"name":"WHO","value":"the pod"},{"name":"GREETING","value":"hello from \$(WHO), \$\$(WHO)"}],
    "volumeMounts":[{"name":"shared","mountPath":"/shared"}]}]}}
JSON
kc create "$WORK/runner.json" >/dev/null && pass || fail "create runner"
kc wait pods runner --for phase=Failed --timeout 60 >"$OUT" && pass || fail "runner did not fail: $(cat "$ERR" "$OUT")"
[ "$(jq -r '.status.initContainerStatuses[0].state.terminated.reason' "$OUT")" = Completed ] && pass || fail "init state: $(jq -c .status.initContainerStatuses "$OUT")"
[ "$(jq -r '.status.containerStatuses[0].state.terminated.exitCode' "$OUT")" = 3 ] && pass || fail "exit code: $(jq -c .status.containerStatuses "$OUT")"
[ "$(jq -r '.status.containerStatuses[0].state.terminated.message' "$OUT")" = "it failed on purpose" ] && pass || fail "message: $(jq -c .status.containerStatuses "$OUT")"
wait "$watcher"
jq -se 'any(.[]; .type=="MODIFIED" and .object.status.containerStatuses[0].state.terminated.message == "it failed on purpose\n")' \
  "$WORK/watch.jsonl" >/dev/null && pass || fail "no watch event with the termination message: $(tail -c 800 "$WORK/watch.jsonl")"
jq -se 'any(.[]; .object.status.containerStatuses[0].state.waiting.reason == "PodInitializing")' "$WORK/watch.jsonl" >/dev/null &&
  pass || fail "no PodInitializing in the watch: $(jq -c '[.type, .object.status.containerStatuses]' "$WORK/watch.jsonl")"
kc logs runner -c main >"$OUT" && pass || fail "logs"
[ "$(cat "$OUT")" = 'ran as 0 with hello from the pod, $(WHO)' ] && pass || fail "log (env expansion): $(cat "$OUT")"

echo "== a sidecar shares localhost and gates the container with its startupProbe; securityContext and limits are real"
cat >"$WORK/agent.json" <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"agent","labels":{"app":"agent"}},
 "spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":1,
  "initContainers":[{"name":"web","image":"$IMAGE","imagePullPolicy":"IfNotPresent","restartPolicy":"Always",
    "command":["sh","-c","mkdir -p /tmp/www && echo sidecar-ok > /tmp/www/index.html && sleep 1 && touch /tmp/up && exec httpd -f -p 127.0.0.1:9000 -h /tmp/www"],
    "startupProbe":{"exec":{"command":["test","-f","/tmp/up"]},"periodSeconds":1,"failureThreshold":30}}],
  "containers":[{"name":"main","image":"$IMAGE","imagePullPolicy":"IfNotPresent",
    "command":["sh","-c","echo agent up; echo line two; echo line three; exec sleep 3600"],
    "securityContext":{"runAsUser":1000,"runAsGroup":1000,"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}},
    "resources":{"limits":{"cpu":"500m","memory":"64Mi"}}}]}}
JSON
kc create "$WORK/agent.json" >/dev/null && pass || fail "create agent"
kc wait pods agent --for condition=Ready --timeout 60 >"$OUT" && pass || fail "agent not Ready: $(cat "$ERR")"
[ "$(jq -r '.status.initContainerStatuses[0].started' "$OUT")" = true ] && pass || fail "sidecar not started"
[ "$(jq -r '.status.phase' "$OUT")" = Running ] && pass || fail "phase $(jq -r .status.phase "$OUT")"
started_web=$(jq -r '.status.initContainerStatuses[0].state.running.startedAt' "$OUT")
started_main=$(jq -r '.status.containerStatuses[0].state.running.startedAt' "$OUT")
[[ "$started_main" > "$started_web" ]] && pass || fail "main ($started_main) must start after the sidecar's probe passed ($started_web + 1 s)"
pod_ip=$(jq -r .status.podIP "$OUT")
uid=$(jq -r .metadata.uid "$OUT")
kc exec agent -c main -- sh -c 'printf "GET / HTTP/1.0\r\n\r\n" | nc 127.0.0.1 9000' >"$OUT" && pass || fail "exec nc: $(cat "$ERR")"
grep -q sidecar-ok "$OUT" && pass || fail "localhost not shared with the sidecar: $(cat "$OUT")"
kc exec agent -c main -- sh -c 'id -u; id -g; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status | tr -s "\t" " "; hostname' >"$OUT" && pass || fail "exec id"
[ "$(cat "$OUT")" = "$(printf '1000\n1000\nCapEff: 0000000000000000\nNoNewPrivs: 1\nagent')" ] && pass || fail "security context: $(cat "$OUT")"
main_id=$(docker ps -q --filter "label=io.kubernetes.pod.uid=$uid" --filter "label=io.kubernetes.container.name=main")
[ "$(docker inspect -f '{{.HostConfig.Memory}} {{.HostConfig.CpuQuota}}' "$main_id")" = "67108864 50000" ] && pass ||
  fail "limits: $(docker inspect -f '{{.HostConfig.Memory}} {{.HostConfig.CpuQuota}}' "$main_id")"
[ "$(docker inspect -f '{{.HostConfig.NetworkMode}}' "$main_id")" = "container:$(docker ps -q --no-trunc --filter "label=io.kubernetes.pod.uid=$uid" --filter label=io.kubernetes.container.name=POD)" ] &&
  pass || fail "main does not join the holder's network namespace"

echo "== exec: stdout, stderr, exit status, stdin on v5 and v4; an exec that cannot start"
kc exec agent -c main -- sh -c 'echo out; echo err >&2; exit 7' >"$OUT" 2>"$ERR"
[ $? = 7 ] && pass || fail "exit status"
[ "$(cat "$OUT")" = out ] && [ "$(cat "$ERR")" = err ] && pass || fail "streams: $(cat "$OUT") / $(cat "$ERR")"
head -c 100000 /dev/urandom | base64 -w0 >"$WORK/stdin"
kc exec agent -c main -i -- sh -c 'wc -c' <"$WORK/stdin" >"$OUT" && pass || fail "stdin v5"
[ "$(tr -d ' ' <"$OUT")" = "$(wc -c <"$WORK/stdin")" ] && pass || fail "stdin v5 bytes: $(cat "$OUT")"
k8s_fake_config '{"exec_protocols":["v4.channel.k8s.io"]}'
kc exec agent -c main -i --protocol v4 -- head -c 5 <"$WORK/stdin" >"$OUT" && pass || fail "stdin v4"
[ "$(cat "$OUT")" = "$(head -c 5 "$WORK/stdin")" ] && pass || fail "stdin v4 bytes"
k8s_fake_config '{"exec_protocols":["v5.channel.k8s.io","v4.channel.k8s.io"]}'
kc exec agent -c main -- no-such-command >"$OUT" 2>"$ERR"
[ $? = 126 ] && grep -q '"reason": "InternalError"' "$ERR" && grep -q 'executable file not found' "$ERR" && pass ||
  fail "a command that cannot start: $(cat "$ERR")"
kc exec agent -- sh -c 'echo only container' >"$OUT" 2>"$ERR" && [ "$(cat "$OUT")" = "only container" ] && pass ||
  fail "without container=, exec goes to the pod's only container: $(cat "$ERR")"
kc exec agent -c nope -- true 2>"$ERR"
grep -q 'container nope is not valid for pod agent' "$ERR" && pass || fail "a container the pod lacks: $(cat "$ERR")"

echo "== logs: container, tailLines, limitBytes"
kc logs agent -c main --tail 2 >"$OUT" && [ "$(cat "$OUT")" = "$(printf 'line two\nline three')" ] && pass || fail "tailLines: $(cat "$OUT")"
kc logs agent -c main --limit-bytes 5 >"$OUT" && [ "$(cat "$OUT")" = "agent" ] && pass || fail "limitBytes: $(cat "$OUT")"

echo "== NetworkPolicy: egress denied really blocks a connection to the node; the Service's endpoint allowed"
python3 - "$K8S_NODE_IP" >"$WORK/listeners.out" 2>&1 <<'PY' &
import socket, sys, threading, time
for port in (18080, 18081):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], 0))
    s.listen()
    print(s.getsockname()[1], flush=True)
    def serve(s=s):
        while True:
            c, _ = s.accept()
            c.sendall(b"hello from the node\n")
            c.close()
    threading.Thread(target=serve, daemon=True).start()
time.sleep(900)
PY
listeners=$!
for _ in $(seq 50); do [ "$(wc -l <"$WORK/listeners.out")" -ge 2 ] && break; sleep 0.1; done
port1=$(sed -n 1p "$WORK/listeners.out"); port2=$(sed -n 2p "$WORK/listeners.out")
probe() { kc exec agent -c main -- sh -c "nc -w 2 $1 $2 </dev/null"; }
probe "$K8S_NODE_IP" "$port1" >"$OUT" 2>"$ERR" && grep -q "hello from the node" "$OUT" && pass ||
  fail "no policy: the node listener must be reachable: $(cat "$OUT" "$ERR")"
cat >"$WORK/deny.json" <<JSON
{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"deny-egress"},
 "spec":{"podSelector":{"matchLabels":{"app":"agent"}},"policyTypes":["Egress"]}}
JSON
kc create "$WORK/deny.json" >/dev/null && pass || fail "create deny-egress"
sleep 1
probe "$K8S_NODE_IP" "$port1" >"$OUT" 2>&1 && fail "deny-egress: connection went through: $(cat "$OUT")" || pass
kc exec agent -c main -- sh -c 'printf "GET / HTTP/1.0\r\n\r\n" | nc -w 2 127.0.0.1 9000' | grep -q sidecar-ok && pass ||
  fail "deny-egress must not police localhost"
cat >"$WORK/svc.json" <<JSON
[{"apiVersion":"v1","kind":"Service","metadata":{"name":"forge-proxy"},
  "spec":{"ports":[{"port":8080,"targetPort":$port1}],"internalTrafficPolicy":"Local"}},
 {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"forge-proxy"},
  "subsets":[{"addresses":[{"ip":"$K8S_NODE_IP","nodeName":"fake-node-1"}],"ports":[{"port":$port1}]}]},
 {"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"allow-proxy"},
  "spec":{"podSelector":{"matchLabels":{"app":"agent"}},"policyTypes":["Egress"],
   "egress":[{"to":[{"ipBlock":{"cidr":"$K8S_NODE_IP/32"}}],"ports":[{"protocol":"TCP","port":$port1}]},
             {"to":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"kube-system"}},
                     "podSelector":{"matchLabels":{"k8s-app":"kube-dns"}}}],"ports":[{"protocol":"UDP","port":53}]}]}}]
JSON
kc create "$WORK/svc.json" >"$WORK/created.jsonl" && pass || fail "create service, endpoints, allow-proxy: $(cat "$ERR")"
cluster_ip=$(head -1 "$WORK/created.jsonl" | jq -r .spec.clusterIP)
sleep 1
probe "$cluster_ip" 8080 >"$OUT" 2>"$ERR" && grep -q "hello from the node" "$OUT" && pass ||
  fail "allow-proxy: the Service by ClusterIP $cluster_ip must work: $(cat "$OUT" "$ERR")"
kc exec agent -c main -- nslookup forge-proxy.forge-e2e.svc.cluster.local >"$OUT" 2>&1
grep -q "$cluster_ip" "$OUT" && pass || fail "DNS name of the Service: $(cat "$OUT")"
probe "$K8S_NODE_IP" "$port2" >"$OUT" 2>&1 && fail "allow-proxy: another port on the node went through" || pass
kc delete networkpolicies allow-proxy >/dev/null && kc delete networkpolicies deny-egress >/dev/null && sleep 1
probe "$K8S_NODE_IP" "$port2" >"$OUT" 2>&1 && pass || fail "with the policies gone, egress is allowed again: $(cat "$OUT")"

echo "== hostNetwork is refused by Pod Security; a pull that fails; activeDeadlineSeconds"
cat >"$WORK/hostnet.json" <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostnet"},
 "spec":{"hostNetwork":true,"containers":[{"name":"main","image":"$IMAGE","command":["true"]}]}}
JSON
kc create "$WORK/hostnet.json" >"$OUT" 2>"$ERR" && fail "a hostNetwork pod was accepted" || pass
grep -q 'HTTP 403' "$ERR" && grep -q 'pods \\"hostnet\\" is forbidden: violates PodSecurity \\"baseline:latest\\": host namespaces (hostNetwork=true)' "$ERR" &&
  pass || fail "PSA message: $(cat "$ERR")"
cat >"$WORK/nopull.json" <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nopull","labels":{"app":"nopull"}},
 "spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"127.0.0.1:1/forge-e2e/none:1"}]}}
JSON
# Seen on a watch, not by polling: ErrImagePull lasts a second before the
# back-off, shorter than one client call on a loaded machine.
rv=$(kc get pods | jq -r .metadata.resourceVersion)
kc watch pods --rv "$rv" --timeout 90 -l app=nopull >"$WORK/nopull-watch.jsonl" &
watcher=$!
kc create "$WORK/nopull.json" >/dev/null && pass || fail "create nopull"
seen=""
for _ in $(seq 300); do
  seen=$(jq -r '.object.status.containerStatuses[0].state.waiting.reason // empty' "$WORK/nopull-watch.jsonl" 2>/dev/null |
         sort -u | tr '\n' ' ')
  [[ "$seen" == *ErrImagePull* && "$seen" == *ImagePullBackOff* ]] && break
  sleep 0.3
done
kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null || true
[[ "$seen" == *ErrImagePull* && "$seen" == *ImagePullBackOff* ]] && pass || fail "pull failure states seen: $seen"
kc logs nopull 2>"$ERR"; grep -q 'is waiting to start: trying and failing to pull image' "$ERR" && pass || fail "logs of a pod that cannot pull: $(cat "$ERR")"
cat >"$WORK/deadline.json" <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deadline"},
 "spec":{"restartPolicy":"Never","activeDeadlineSeconds":2,"terminationGracePeriodSeconds":1,
  "containers":[{"name":"main","image":"$IMAGE","imagePullPolicy":"IfNotPresent","command":["sleep","600"]}]}}
JSON
kc create "$WORK/deadline.json" >/dev/null && kc wait pods deadline --for phase=Failed --timeout 30 >"$OUT" && pass || fail "deadline pod"
[ "$(jq -r .status.reason "$OUT")" = DeadlineExceeded ] && pass || fail "reason: $(jq -c .status "$OUT")"

echo "== a graceful delete stops and removes the pod's containers, then the object"
kc delete pods agent --grace 1 >"$OUT" && pass || fail "delete agent"
[ "$(jq -r .metadata.deletionGracePeriodSeconds "$OUT")" = 1 ] && pass || fail "deletionGracePeriodSeconds: $(jq -c .metadata "$OUT")"
kc wait pods agent --for delete=gone --timeout 30 && pass || fail "agent still there"
[ -z "$(docker ps -aq --filter "label=io.kubernetes.pod.uid=$uid")" ] && pass || fail "agent's containers left behind"

if command -v kubectl >/dev/null 2>&1; then
  echo "== kubectl, the official client, against the fake"
  cat >"$WORK/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "$K8S_URL", certificate-authority: "$WORK/tls.crt"}}]
users: [{name: e2e, user: {token: "$K8S_TOKEN"}}]
contexts: [{name: fake, context: {cluster: fake, user: e2e, namespace: $K8S_NS}}]
current-context: fake
YAML
  export KUBECONFIG=$WORK/kubeconfig
  kubectl run kubectl-made --image="$IMAGE" --image-pull-policy=IfNotPresent --restart=Never --command -- sh -c 'echo made by kubectl; sleep 600' >"$OUT" 2>"$ERR" &&
    pass || fail "kubectl run: $(cat "$ERR")"
  kubectl wait --for=condition=Ready pod/kubectl-made --timeout=60s >"$OUT" 2>"$ERR" && pass || fail "kubectl wait: $(cat "$ERR")"
  [ "$(kubectl logs kubectl-made 2>"$ERR")" = "made by kubectl" ] && pass || fail "kubectl logs: $(cat "$ERR")"
  [ "$(kubectl exec kubectl-made -- sh -c 'echo exec by kubectl' 2>"$ERR")" = "exec by kubectl" ] && pass || fail "kubectl exec: $(cat "$ERR")"
  kubectl get pods -o name >"$OUT" 2>"$ERR" && grep -q pod/kubectl-made "$OUT" && pass || fail "kubectl get: $(cat "$ERR")"
  kubectl delete pod kubectl-made --grace-period=1 >"$OUT" 2>"$ERR" && pass || fail "kubectl delete: $(cat "$ERR")"
else
  echo "(kubectl is not installed: its checks are left out)"
fi

stop_k8s_fake
[ -z "$(docker ps -aq --filter "label=forge.k8s-fake.pid=$K8S_PID")" ] && pass || fail "containers left after the fake stopped"
finish
