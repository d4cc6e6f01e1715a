#!/usr/bin/env bash
# The fake Kubernetes API server's scale mode (a test double; pods are not
# processes), as the benchmark uses it: configured latencies for scheduling,
# image pulls (once per image per node) and starts; a scheduler that fills
# nodes and reports Unschedulable; simulated runs that end with an exit code
# and a termination message; API Priority and Fairness 429s with Retry-After
# while long-running watches pass; 410 Expired for watches; evictions (kubelet
# node pressure, Eviction API, the control endpoint); an API server restart
# that drops connections and keeps the state; counters by verb and resource.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
K8S_NS=forge-e2e
trap 'stop_k8s_fake; rm -rf "$WORK"' EXIT
start_k8s_fake scale --nodes 2 --node-pods 3 || { fail "start"; finish; exit 1; }
python3 - "$K8S_URL" "$K8S_TOKEN" <<'PY'
import http.client, json, sys, threading, time, urllib.parse

url, token = sys.argv[1], sys.argv[2]
host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
NS = "/api/v1/namespaces/forge-e2e"
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def call(method, path, body=None, auth=True, timeout=30):
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    h = {"Authorization": "Bearer " + token} if auth else {}
    if body is not None:
        h["Content-Type"] = "application/json"
    c.request(method, path, json.dumps(body) if body is not None else None, h)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data), r
    except ValueError:
        return r.status, data, r


def control(what, body=None):
    return call("POST" if body is not None else "GET", "/_fake/" + what, body, auth=False)[1]


def pod(name, image="forge-busybox:latest", annotations=None, labels=None):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations or {},
            "labels": labels or {"app": "scale"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": image,
                     "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]}}


def wait_for(name, pred, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        s, obj, _ = call("GET", f"{NS}/pods/{name}")
        if pred(s, obj):
            return obj
        time.sleep(0.1)
    return None


def phase(p):
    return lambda s, o: s == 200 and o["status"].get("phase") == p


# --- latencies and the scheduler ---------------------------------------------
control("config", {"schedule_latency": 0.3, "pull_latency": 0.5, "start_latency": 0.2})
t0 = time.time()
s, _, _ = call("POST", NS + "/pods", pod("first", "registry.local/task:1"))
check(s == 201, f"create first: {s}")
got = wait_for("first", phase("Running"))
check(got is not None and time.time() - t0 >= 0.95, "first pod Running only after schedule + pull + start")
st = got["status"] if got else {}
check(any(c["type"] == "PodScheduled" and c["status"] == "True" for c in st.get("conditions", [])), "PodScheduled")
check(st.get("containerStatuses", [{}])[0].get("state", {}).get("running") is not None, "container running")
node = got["spec"]["nodeName"] if got else ""
for i in range(2, 8):
    call("POST", NS + "/pods", pod(f"p{i}", "registry.local/task:1"))
time.sleep(2.5)
_, lst, _ = call("GET", NS + "/pods")
pending = [p for p in lst["items"] if not p["spec"].get("nodeName")]
check(len(pending) == 1, f"2 nodes x 3 pods: one of 7 left unscheduled, got {len(pending)}")
msg = next((c.get("message", "") for p in pending for c in p["status"].get("conditions", [])
            if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"), "")
check(msg.startswith("0/2 nodes are available: 2 Too many pods."), f"Unschedulable message: {msg!r}")
call("DELETE", f"{NS}/pods/first", {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
if pending:
    check(wait_for(pending[0]["metadata"]["name"], phase("Running")) is not None, "a freed slot schedules the pending pod")
control("config", {"schedule_latency": None, "pull_latency": None, "start_latency": None})
call("DELETE", f"{NS}/pods?labelSelector=app%3Dscale", {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})

# --- simulated runs: exit codes and termination messages -----------------------
call("POST", NS + "/pods", pod("fails", annotations={"fake.forge.dev/run-seconds": "0.3", "fake.forge.dev/exit-code": "3",
                                                    "fake.forge.dev/termination-message": "bye"}, labels={"app": "run"}))
call("POST", NS + "/pods", pod("works", annotations={"fake.forge.dev/run-seconds": "0.3"}, labels={"app": "run"}))
f = wait_for("fails", phase("Failed"))
term = f["status"]["containerStatuses"][0]["state"].get("terminated", {}) if f else {}
check(term.get("exitCode") == 3 and term.get("message") == "bye" and term.get("reason") == "Error", f"failed run: {term}")
check(wait_for("works", phase("Succeeded")) is not None, "a run that exits 0 Succeeds")

# --- API Priority and Fairness ---------------------------------------------------------
control("config", {"apf": {"seats": 1, "queue_length": 1, "queue_wait": 0.2, "service_time": 0.4}})
watch = http.client.HTTPConnection(host, port, timeout=30)
results = []


def get():
    s, body, r = call("GET", NS + "/pods")
    results.append((s, r.getheader("Retry-After"), body.get("reason") if isinstance(body, dict) else None,
                    r.getheader("X-Kubernetes-PF-PriorityLevel-UID")))


threads = [threading.Thread(target=get) for _ in range(6)]
for t in threads:
    t.start()
time.sleep(0.1)
watch.request("GET", NS + "/pods?watch=true&timeoutSeconds=1", headers={"Authorization": "Bearer " + token})
wr = watch.getresponse()
check(wr.status == 200, f"a watch (long-running) passes while the seats are taken: {wr.status}")
wr.read()
watch.close()
for t in threads:
    t.join()
codes = sorted(r[0] for r in results)
check(codes.count(429) >= 3 and codes.count(200) >= 1, f"1 seat, queue of 1: {codes}")
check(all(r[1] == "1" and r[2] == "TooManyRequests" for r in results if r[0] == 429), f"429s carry Retry-After: {results}")
check(all(r[3] for r in results), "every answer names its priority level")
check(control("stats")["apf_rejected"] >= 3, "stats count APF rejections")
control("config", {"apf": None})

# --- watches: 410 Expired ----------------------------------------------------------------
_, lst, _ = call("GET", NS + "/pods")
rv = lst["metadata"]["resourceVersion"]
w = http.client.HTTPConnection(host, port, timeout=30)
w.request("GET", NS + f"/pods?watch=true&resourceVersion={rv}&timeoutSeconds=20", headers={"Authorization": "Bearer " + token})
wr = w.getresponse()
call("POST", NS + "/pods", pod("newer", labels={"app": "newer"}))  # history past rv, then compacted
time.sleep(0.3)
control("expire", {})
ev, line = {}, b""
while ev.get("type") != "ERROR":
    line = wr.readline()
    if not line:
        break
    ev = json.loads(line)
check(ev.get("type") == "ERROR" and ev.get("object", {}).get("code") == 410 and ev["object"].get("reason") == "Expired",
      f"an open watch ends with ERROR 410: {line[:200]!r}")
w.close()
w = http.client.HTTPConnection(host, port, timeout=30)
w.request("GET", NS + f"/pods?watch=true&resourceVersion={rv}", headers={"Authorization": "Bearer " + token})
ev = json.loads(w.getresponse().readline())
check(ev.get("type") == "ERROR" and ev["object"]["code"] == 410, "a watch from a compacted resourceVersion is 410")
w.close()

# --- evictions ------------------------------------------------------------------------------
for n in ("ev1", "ev2", "ev3"):
    call("POST", NS + "/pods", pod(n, labels={"app": "evict", "n": n}))
for n in ("ev1", "ev2", "ev3"):
    wait_for(n, phase("Running"))
out = control("evict", {"namespace": "forge-e2e", "labelSelector": "n=ev1", "mode": "fail"})
check(out.get("evicted") == 1, f"evict: {out}")
e1 = wait_for("ev1", phase("Failed"))
check(e1 is not None and e1["status"].get("reason") == "Evicted"
      and any(c["type"] == "DisruptionTarget" and c.get("reason") == "TerminationByKubelet" for c in e1["status"]["conditions"]),
      f"node-pressure eviction: {e1 and e1['status']}")
control("evict", {"namespace": "forge-e2e", "labelSelector": "n=ev2", "mode": "delete"})
check(wait_for("ev2", lambda s, o: s == 404) is not None, "an eviction by deletion removes the pod")
s, body, _ = call("POST", f"{NS}/pods/ev3/eviction", {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "ev3"},
                                                     "deleteOptions": {"gracePeriodSeconds": 0}})
check(s == 201 and body.get("status") == "Success", f"Eviction API: {s} {body}")
check(wait_for("ev3", lambda s, o: s == 404) is not None, "the Eviction API deletes the pod")

# --- an API server restart ---------------------------------------------------------------------
_, lst, _ = call("GET", NS + "/pods")
before = sorted(p["metadata"]["name"] for p in lst["items"])
rv = lst["metadata"]["resourceVersion"]
w = http.client.HTTPConnection(host, port, timeout=30)
w.request("GET", NS + f"/pods?watch=true&resourceVersion={rv}&timeoutSeconds=30", headers={"Authorization": "Bearer " + token})
wr = w.getresponse()
call("POST", NS + "/pods", pod("during", labels={"app": "newer"}))
before.append("during")
before.sort()
control("restart", {"downtime": 1.5})
t0 = time.time()
try:
    rest = wr.read()
    broken = True
except (http.client.IncompleteRead, ConnectionError, OSError):
    broken = True
check(broken and time.time() - t0 < 5, "the open watch is dropped by the restart")
time.sleep(0.3)
try:
    call("GET", NS + "/pods", timeout=2)
    refused = False
except OSError:
    refused = True
check(refused, "connections are refused while the server is down")
time.sleep(2)
s, lst, _ = call("GET", NS + "/pods")
check(s == 200 and sorted(p["metadata"]["name"] for p in lst["items"]) == before, "after the restart the state is kept")
w = http.client.HTTPConnection(host, port, timeout=30)
w.request("GET", NS + f"/pods?watch=true&resourceVersion={rv}", headers={"Authorization": "Bearer " + token})
ev = json.loads(w.getresponse().readline())
check(ev.get("type") == "ERROR" and ev["object"]["code"] == 410, "a watch resumed after the restart must relist (410)")
stats = control("stats")
check(stats["restarts"] == 1, "stats count the restart")

# --- counters by verb and resource --------------------------------------------------------------
req = stats["requests"]
check(req.get("create pods", 0) == stats["creates"] and req.get("create pods", 0) >= 12, f"create pods: {req}")
check(req.get("create pods/eviction") == 1 and req.get("watch pods", 0) >= 4 and req.get("list pods", 0) >= 5, f"requests: {req}")
check(req.get("deletecollection pods") == 1, f"deletecollection: {req}")
print(f"scale checks: {passed} passed, {failed} failed", file=sys.stderr)
sys.exit(1 if failed else 0)
PY
[ $? = 0 ] && pass || fail "scale-mode checks (above)"
finish
