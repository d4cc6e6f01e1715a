"""The fake cluster: store, REST semantics, scheduler, controllers, kubelet.

REST semantics follow the API conventions: create (generateName, namespace
must exist and not be terminating, defaulting, validation, admission),
update with optimistic concurrency (409 Conflict on a stale
resourceVersion), patch (merge, JSON, strategic), delete with
DeleteOptions (gracePeriodSeconds, preconditions, dryRun; graceful for
scheduled, non-terminal pods: deletionTimestamp, then the kubelet removes
the object once its containers stopped; finalizers hold any object),
deletecollection, and the pod subresources binding, eviction and status.
"""
import base64
import collections
import ipaddress
import json
import random
import threading
import time

from . import admission
from .apf import Apf
from .kubelet import Kubelet
from .loop import Loop, latency
from .meta import (ApiError, clone, field_matches, label_selector, not_found, parse_field_selector,
                   parse_selector, rfc3339)
from .patch import json_patch, merge_patch
from .store import BY_KEY, Store

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

DEFAULT_CONFIG = {
    # faults (older settings, kept)
    "throttle": 0, "retry_after": 1, "fail5xx": 0,
    "exec_protocols": ["v5.channel.k8s.io", "v4.channel.k8s.io"], "exec_drop": False,
    "start_delay": 0.05, "pod_log": "keep-alive started\nline 2\nline 3\n",
    # watch
    "bookmark_interval": 1.0, "watch_expire_every": None,
    # latencies (scale mode): number or {"mean": s, "jitter": s}
    "schedule_latency": None, "sandbox_latency": None, "pull_latency": None, "start_latency": None,
    "kill_latency": None, "scheduler_qps": None, "max_parallel_pulls": 1,
    "run_seconds": None, "init_run_seconds": 0, "exit_code": 0, "missing_images": [],
    # kubelet
    "restart_backoff": 10, "image_pull_backoff": 10, "pull_error_hold": 1.0,
    # API Priority and Fairness: {"seats": N, "queue_length": Q, "queue_wait": s, "service_time": s}
    # or {"levels": {"workload-low": {...}, "global-default": {...}}}
    "apf": None,
    # evictions (scale mode): a rate per second over running pods, and "fail" or "delete"
    "eviction_rate": 0, "eviction_mode": "fail",
    # restarts: history forgotten on restart (watches resume with 410, as after a real restart)
    "restart_compacts": True,
    # network (real mode): "from-node" (probes and the node reach pods; egress to the node is
    # policed), "both" (the docs' allowance: node traffic never policed), "none"
    "node_traffic": "from-node", "policy_action": "drop",
    "request_log": True,
}


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counters = collections.Counter()
        self.requests = collections.Counter()   # "verb resource[/sub]"
        self.codes = collections.Counter()
        self.log = []

    def add(self, key, n=1):
        with self.lock:
            self.counters[key] += n


class Cluster:
    def __init__(self, mode, token, user="forge-test", pod_security="baseline", nodes=None,
                 namespaces=(), scratch="/tmp"):
        self.mode = mode
        self.lock = threading.Condition(threading.RLock())
        self.store = Store(self.lock)
        self.loop = Loop(self.lock)
        self.config = dict(DEFAULT_CONFIG)
        self.stats = Stats()
        self.tokens = {token: (user, ["system:authenticated"])}
        self.pod_security = pod_security
        self.apf = Apf(self)
        self.scratch = scratch
        self.network = None
        self.node_ips = {}
        self.kubelet_nodes = set()
        self.max_pods = 0
        self.evictions = 0
        self.restarts = 0
        self.exec_sessions = set()  # open exec streams, for POST /_fake/drop_execs
        self.server = None
        self.scheduler = Scheduler(self)
        self.endpoints = EndpointsController(self)
        self.store.subscribers.append(self._on_event)
        self.runtime = None
        self.kubelet = None
        self._namespaces = list(namespaces)
        self._nodes = nodes or {"count": 1}

    def start(self, runtime, network=None):
        self.runtime = runtime
        self.network = network
        self.kubelet = Kubelet(self, runtime)
        with self.lock:
            self.bootstrap()
        self.loop.call_later(1.0, self.eviction_tick)
        self.loop.call_later(1.0, self.expire_tick)

    # --- bootstrap objects --------------------------------------------------
    def bootstrap(self):
        for ns in list(SYSTEM_NAMESPACES) + self._namespaces:
            if self.store.get("namespaces", "", ns) is None:
                self.create("namespaces", "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        n = int(self._nodes.get("count", 1))
        for i in range(n):
            name = self._nodes.get("name", "fake-node") + f"-{i + 1}"
            ip = self.network.node_ip if self.network else "172.31.%d.%d" % ((i + 1) // 250, (i + 1) % 250 + 1)
            self.node_ips[name] = ip
            self.kubelet_nodes.add(name)
            self.store.create("nodes", self.node_object(name, ip))
        svc_ip = self.network.service_ip(1) if self.network else "10.96.0.1"
        self.create("services", "default", {"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": svc_ip, "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}})
        dns_ip = self.network.service_ip(10) if self.network else "10.96.0.10"
        self.create("services", "kube-system", {"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": "kube-dns", "labels": {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
            "spec": {"clusterIP": dns_ip, "selector": {"k8s-app": "kube-dns"},
                     "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                               {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53}]}})
        if self.network:
            self.network.bootstrap(self)

    def node_object(self, name, ip):
        cfg = self._nodes
        cpu, mem, pods = str(cfg.get("cpu", "16")), str(cfg.get("memory", "64Gi")), str(cfg.get("pods", 110))
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}},
            "spec": {"podCIDR": cfg.get("pod_cidr", "")} if cfg.get("pod_cidr") else {},
            "status": {"capacity": {"cpu": cpu, "memory": mem, "pods": pods},
                       "allocatable": {"cpu": cpu, "memory": mem, "pods": pods},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status",
                                       "lastHeartbeatTime": rfc3339(), "lastTransitionTime": rfc3339()}],
                       "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
                       "nodeInfo": {"kubeletVersion": "v1.31.0-forge-fake", "kubeProxyVersion": "v1.31.0-forge-fake",
                                    "containerRuntimeVersion": "docker://" if self.mode == "real" else "fake://",
                                    "operatingSystem": "linux", "architecture": "amd64"}}}

    def node_ip(self, node):
        return self.node_ips.get(node, "")

    def is_kubelet_node(self, node):
        return node in self.kubelet_nodes

    # --- subscriptions (under the lock; queue work only) ------------------------
    def _on_event(self, event):
        if event.resource == "pods":
            if event.type == "ADDED":
                self.max_pods = max(self.max_pods, len(self.store.objects["pods"]))
            self.scheduler.on_pod_event(event)
            if self.kubelet is not None:
                self.kubelet.on_pod_event(event)
        if event.resource == "namespaces" and event.type == "ADDED":
            ns = event.name
            self.loop.call_soon(lambda: self._default_service_account(ns))
        self.endpoints.on_event(event)
        if self.network is not None:
            self.network.on_event(event)

    def _default_service_account(self, ns):
        if self.store.get("namespaces", "", ns) and self.store.get("serviceaccounts", ns, "default") is None:
            self.store.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                  "metadata": {"name": "default", "namespace": ns}})

    # --- REST: create ------------------------------------------------------------
    def check_namespace(self, ns, creating=True):
        nso = self.store.get("namespaces", "", ns)
        if nso is None:
            raise not_found("namespaces", ns)
        if creating and nso["metadata"].get("deletionTimestamp"):
            raise ApiError(403, "Forbidden", f"unable to create new content in namespace {ns} because it is being terminated",
                           {"name": ns, "kind": "namespaces"})

    def create(self, key, ns, obj, dry_run=False):
        """Caller holds the lock."""
        res = BY_KEY[key]
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if obj.get("kind") not in (None, res.kind):
            raise ApiError(400, "BadRequest", f"the body of the request was a {obj.get('kind')}, not a {res.kind}")
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind)
        for system in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
            meta.pop(system, None)
        if res.namespaced:
            if meta.get("namespace") not in (None, "", ns):
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = ns
            self.check_namespace(ns)
        else:
            meta.pop("namespace", None)
        if key == "pods":
            return self.create_pod(ns, obj, dry_run)
        admission.default_and_validate(key, obj, self.store, ns)
        if key == "services":
            self.allocate_cluster_ip(obj)
        if dry_run:
            return obj
        return self.store.create(key, obj)

    def create_pod(self, ns, pod, dry_run):
        admission.default_pod(pod)
        admission.validate_pod(pod)
        meta = pod["metadata"]
        if not meta.get("name"):
            from .meta import generated_name
            meta["name"] = generated_name(meta["generateName"])
        admission.admit_pod(self.store, pod, ns, self.pod_security)
        pod["status"] = {"phase": "Pending", "qosClass": admission.qos_class(pod)}
        if dry_run:
            return pod
        return self.store.create("pods", pod)

    def allocate_cluster_ip(self, svc):
        spec = svc["spec"]
        if spec.get("type") == "ExternalName" or spec.get("clusterIP") == "None":
            spec["clusterIPs"] = [spec["clusterIP"]] if spec.get("clusterIP") else []
            return
        used = {s["spec"].get("clusterIP") for s in self.store.items("services")}
        cidr = ipaddress.ip_network(self.network.service_cidr if self.network else "10.96.0.0/16")
        want = spec.get("clusterIP")
        if want:
            if ipaddress.ip_address(want) not in cidr:
                raise admission.invalid("Service", svc["metadata"]["name"], [(
                    "FieldValueInvalid", "spec.clusterIPs", f'Invalid value: ["{want}"]: failed to allocate IP {want}: '
                    f"the provided IP ({want}) is not in the valid range. The range of valid IPs is {cidr}")])
            if want in used:
                raise admission.invalid("Service", svc["metadata"]["name"], [(
                    "FieldValueInvalid", "spec.clusterIPs", f'Invalid value: ["{want}"]: failed to allocate IP {want}: provided IP is already allocated')])
        else:
            hosts = [str(h) for h in list(cidr.hosts())[20:]]
            free = [h for h in hosts[:4000] if h not in used]
            if not free:
                raise ApiError(500, "InternalError", "Internal error occurred: failed to allocate a serviceIP: range is full")
            want = random.choice(free)
        spec["clusterIP"] = want
        spec["clusterIPs"] = [want]

    # --- REST: read -----------------------------------------------------------------
    def get(self, key, ns, name):
        obj = self.store.get(key, ns, name)
        if obj is None:
            raise not_found(BY_KEY[key].plural, name, BY_KEY[key].group)
        return obj

    @staticmethod
    def field_getters(key):
        getters = {"metadata.name": lambda o: o["metadata"]["name"],
                   "metadata.namespace": lambda o: o["metadata"].get("namespace", "")}
        if key == "pods":
            getters.update({"spec.nodeName": lambda o: o["spec"].get("nodeName", ""),
                            "spec.restartPolicy": lambda o: o["spec"].get("restartPolicy"),
                            "spec.schedulerName": lambda o: o["spec"].get("schedulerName"),
                            "spec.serviceAccountName": lambda o: o["spec"].get("serviceAccountName"),
                            "spec.hostNetwork": lambda o: str(bool(o["spec"].get("hostNetwork"))).lower(),
                            "status.phase": lambda o: o.get("status", {}).get("phase", ""),
                            "status.podIP": lambda o: o.get("status", {}).get("podIP", ""),
                            "status.nominatedNodeName": lambda o: ""})
        if key == "secrets":
            getters["type"] = lambda o: o.get("type")
        if key == "events":
            for f in ("involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "reason", "type"):
                getters[f] = (lambda path: lambda o: _dig(o, path))(f)
        return getters

    def filters(self, key, query):
        labels = parse_selector(query.get("labelSelector", [""])[0])
        fields = parse_field_selector(query.get("fieldSelector", [""])[0], self.field_getters(key))
        return lambda o: labels.matches(o["metadata"].get("labels")) and field_matches(o, fields)

    def list(self, key, ns, query):
        """(items, resourceVersion, continue, remaining); caller holds the lock."""
        match = self.filters(key, query)
        items = sorted((o for o in self.store.items(key, ns) if match(o)),
                       key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        rv = str(self.store.rv)
        start = 0
        token = query.get("continue", [""])[0]
        if token:
            try:
                state = json.loads(base64.b64decode(token))
                if int(state["rv"]) < self.store.compacted_rv:
                    raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                                   "consistent list result. You can start a new list without the continue parameter.")
                rv, after = state["rv"], tuple(state["after"])
                start = next((i for i, o in enumerate(items)
                              if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after), len(items))
            except (ValueError, KeyError, TypeError):
                raise ApiError(400, "BadRequest", "continue key is not valid")
        limit = int(query.get("limit", ["0"])[0] or 0)
        if limit > 0 and start + limit < len(items):
            page = items[start:start + limit]
            last = page[-1]["metadata"]
            cont = base64.b64encode(json.dumps({"rv": rv, "after": [last.get("namespace", ""), last["name"]]}).encode()).decode()
            return page, rv, cont, len(items) - start - limit
        return items[start:], rv, "", None

    # --- REST: update and patch ----------------------------------------------------
    def update(self, key, ns, name, body, subresource=None, dry_run=False):
        cur = self.get(key, ns, name)
        if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
        meta = body["metadata"]
        if meta.get("name") not in (None, name):
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        want_rv = meta.get("resourceVersion")
        if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
            res = BY_KEY[key]
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.describe()} "{name}": the object '
                           "has been modified; please apply your changes to the latest version and try again",
                           {"name": name, "group": res.group, "kind": res.plural})
        new = clone(body)
        # system fields are the server's
        for system in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                       "generation", "namespace", "name"):
            if system in cur["metadata"]:
                new["metadata"][system] = cur["metadata"][system]
            else:
                new["metadata"].pop(system, None)
        new["apiVersion"], new["kind"] = cur["apiVersion"], cur["kind"]
        res = BY_KEY[key]
        if subresource == "status":
            status = new.get("status")
            new = clone(cur)
            new["status"] = status
        elif "status" in res.subresources:
            if "status" in cur:
                new["status"] = cur["status"]
            else:
                new.pop("status", None)
        if key == "pods" and subresource != "status":
            self.check_pod_update(cur, new)
        elif key not in ("pods",) and subresource != "status":
            admission.default_and_validate(key, new, self.store, ns)
            if key == "services" and new["spec"].get("clusterIP") != cur["spec"].get("clusterIP"):
                if new["spec"].get("clusterIP"):
                    raise admission.invalid("Service", name, [("FieldValueInvalid", "spec.clusterIPs[0]",
                                                               "Invalid value: field is immutable")])
                new["spec"]["clusterIP"] = cur["spec"].get("clusterIP")
                new["spec"]["clusterIPs"] = cur["spec"].get("clusterIPs")
        if dry_run:
            return new
        out = self.store.replace(key, new)
        if out["metadata"].get("deletionTimestamp") and not out["metadata"].get("finalizers") and key != "pods":
            self.store.remove(key, ns, name)
        elif key == "pods" and out["metadata"].get("deletionTimestamp") and not out["metadata"].get("finalizers"):
            self.maybe_remove_pod(ns, name)
        return out

    def check_pod_update(self, cur, new):
        a, b = clone(cur["spec"]), clone(new.get("spec") or {})
        for spec in (a, b):
            for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
                c.pop("image", None)
            spec.pop("activeDeadlineSeconds", None)
            spec.pop("tolerations", None)
        if a != b:
            raise admission.invalid("Pod", cur["metadata"]["name"], [(
                "FieldValueForbidden", "spec",
                "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                "(allow it to be set to 1 if it was previously negative)")])
        old_ads, new_ads = cur["spec"].get("activeDeadlineSeconds"), new["spec"].get("activeDeadlineSeconds")
        if old_ads is not None and (new_ads is None or new_ads > old_ads):
            raise admission.invalid("Pod", cur["metadata"]["name"], [(
                "FieldValueInvalid", "spec.activeDeadlineSeconds",
                f"Invalid value: {new_ads}: must be less than or equal to previous value")])

    def patch(self, key, ns, name, body, content_type, subresource=None, dry_run=False):
        cur = self.get(key, ns, name)
        ctype = (content_type or "").split(";")[0].strip()
        try:
            patch = json.loads(body or b"null")
        except ValueError as e:
            raise ApiError(400, "BadRequest", f"error decoding patch: {e}")
        if ctype == "application/json-patch+json":
            new = json_patch(cur, patch)
        elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json",
                       "application/apply-patch+yaml", "application/apply-patch+json"):
            if not isinstance(patch, dict):
                raise ApiError(400, "BadRequest", "a merge patch must be a JSON object")
            new = merge_patch(cur, patch, strategic=ctype != "application/merge-patch+json")
        else:
            raise ApiError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - '
                           f'accepted media types include: application/json-patch+json, '
                           f'application/merge-patch+json, application/apply-patch+yaml')
        new.setdefault("metadata", {})["resourceVersion"] = (patch.get("metadata") or {}).get("resourceVersion") \
            if isinstance(patch, dict) else None
        return self.update(key, ns, name, new, subresource, dry_run)

    # --- REST: delete ------------------------------------------------------------------
    def delete(self, key, ns, name, options, dry_run=False):
        cur = self.get(key, ns, name)
        pre = (options or {}).get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != cur["metadata"]["uid"]:
            raise ApiError(409, "Conflict", f'Precondition failed: UID in precondition: {pre["uid"]}, UID in object meta: {cur["metadata"]["uid"]}')
        if pre.get("resourceVersion") and pre["resourceVersion"] != cur["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Precondition failed: ResourceVersion in precondition: {pre["resourceVersion"]}, '
                           f'ResourceVersion in object meta: {cur["metadata"]["resourceVersion"]}')
        if dry_run:
            return cur
        if key == "pods":
            return self.delete_pod(cur, options or {})
        if key == "namespaces":
            return self.delete_namespace(cur)
        if cur["metadata"].get("finalizers"):
            return self.store.update(key, ns, name, lambda o: o["metadata"].setdefault("deletionTimestamp", rfc3339()))
        return self.store.remove(key, ns, name)

    def delete_pod(self, pod, options):
        """CheckGracefulDelete: the request's grace, else the pod's; 0 if unscheduled or terminal."""
        ns, name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        grace = int(grace)
        if not pod["spec"].get("nodeName") or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            grace = 0
        if not self.is_kubelet_node(pod["spec"].get("nodeName", "")) or \
                (pod["metadata"].get("annotations") or {}).get("fake.forge.dev/static") == "true":
            grace = 0
        if grace == 0 and not pod["metadata"].get("finalizers"):
            return self.store.remove("pods", ns, name)

        def mark(o):
            m = o["metadata"]
            if m.get("deletionTimestamp") and m.get("deletionGracePeriodSeconds", 0) <= grace:
                return False
            m["deletionTimestamp"] = rfc3339(time.time() + grace)
            m["deletionGracePeriodSeconds"] = grace
        out = self.store.update("pods", ns, name, mark)
        if grace == 0:
            self.maybe_remove_pod(ns, name)
        return out

    def maybe_remove_pod(self, ns, name):
        pod = self.store.get("pods", ns, name)
        if pod and pod["metadata"].get("deletionTimestamp") and not pod["metadata"].get("finalizers"):
            worker = self.kubelet.workers.get(pod["metadata"]["uid"]) if self.kubelet else None
            if worker is None or worker.removed:
                self.store.remove("pods", ns, name)

    def finalize_pod_deletion(self, ns, name, uid):
        """The kubelet stopped the pod's containers: a deletion can complete."""
        pod = self.store.get("pods", ns, name)
        if pod and pod["metadata"]["uid"] == uid and pod["metadata"].get("deletionTimestamp") \
                and not pod["metadata"].get("finalizers"):
            self.store.remove("pods", ns, name)

    def delete_namespace(self, nso):
        name = nso["metadata"]["name"]
        if name in SYSTEM_NAMESPACES:
            raise ApiError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                           {"name": name, "kind": "namespaces"})
        out = self.store.update("namespaces", "", name, lambda o: (
            o["metadata"].setdefault("deletionTimestamp", rfc3339()), o.__setitem__("status", {"phase": "Terminating"})))
        self.loop.call_soon(lambda: self.finish_namespace(name))
        return out

    def finish_namespace(self, name):
        left = 0
        for res in BY_KEY.values():
            if not res.namespaced:
                continue
            for o in self.store.items(res.key, name):
                left += 1
                if not o["metadata"].get("deletionTimestamp"):
                    try:
                        self.delete(res.key, name, o["metadata"]["name"], {})
                    except ApiError:
                        pass
        if left:
            self.loop.call_later(0.2, lambda: self.finish_namespace(name))
        else:
            self.store.remove("namespaces", "", name)

    def delete_collection(self, key, ns, query, options):
        match = self.filters(key, query)
        out = []
        for o in [o for o in self.store.items(key, ns) if match(o)]:
            try:
                d = self.delete(key, o["metadata"].get("namespace", ""), o["metadata"]["name"], options)
                if d is not None:
                    out.append(d)
            except ApiError:
                pass
        return out

    # --- pod subresources -----------------------------------------------------------------
    def bind(self, ns, name, binding):
        node = (binding.get("target") or {}).get("name")
        pod = self.get("pods", ns, name)
        if pod["spec"].get("nodeName"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"')
        self.scheduler.bind(pod, node)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def evict_api(self, ns, name, body):
        """policy/v1 Eviction: DisruptionTarget, then a graceful delete."""
        pod = self.get("pods", ns, name)
        opts = (body or {}).get("deleteOptions") or {}
        if not pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            def cond(o):
                cs = o.setdefault("status", {}).setdefault("conditions", [])
                if any(c["type"] == "DisruptionTarget" for c in cs):
                    return False
                cs.append({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                           "message": "Eviction API: evicting", "lastTransitionTime": rfc3339()})
            self.store.update("pods", ns, name, cond)
        self.delete_pod(self.get("pods", ns, name), opts)
        self.evictions += 1
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def kubelet_evict(self, pods, mode):
        """Node-pressure eviction (Failed, Evicted) or a deletion, for the control endpoint."""
        n = 0
        for pod in pods:
            ns, name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
            if mode == "delete":
                self.evict_api(ns, name, {})
                n += 1
                continue
            worker = self.kubelet.workers.get(pod["metadata"]["uid"])
            msg = ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. "
                   f"Container {pod['spec']['containers'][0]['name']} was using 1Gi, request is 0, has larger "
                   "consumption of memory. ")
            if worker and worker.evict(msg):
                n += 1
                self.evictions += 1
        return n

    def eviction_tick(self):
        rate = float(self.config.get("eviction_rate") or 0)
        if rate > 0:
            running = [p for p in self.store.items("pods") if p.get("status", {}).get("phase") == "Running"
                       and not p["metadata"].get("deletionTimestamp")
                       and not (p["metadata"].get("annotations") or {}).get("fake.forge.dev/static")]
            k = sum(1 for _ in range(len(running)) if random.random() < rate * 0.5 / max(1, len(running))) \
                if len(running) > 200 else sum(1 for _ in running if random.random() < rate * 0.5 / max(1, len(running)))
            if running and k:
                self.kubelet_evict(random.sample(running, min(k, len(running))), self.config.get("eviction_mode", "fail"))
        self.loop.call_later(0.5, self.eviction_tick)

    def expire_tick(self):
        every = self.config.get("watch_expire_every")
        if every:
            if time.monotonic() - getattr(self, "_last_expire", 0) >= float(every):
                self._last_expire = time.monotonic()
                self.store.expire()
        self.loop.call_later(0.5, self.expire_tick)


def _dig(obj, path):
    for p in path.split("."):
        obj = (obj or {}).get(p)
    return obj


class Scheduler:
    """Binds pending pods to nodes: nodeSelector, cpu/memory requests, pods per
    node; an image named "...unschedulable..." never fits (a test hook). Its
    pace: schedule_latency per pod, at most scheduler_qps bindings a second."""

    def __init__(self, cluster):
        self.c = cluster
        self.usage = collections.defaultdict(lambda: {"cpu": 0.0, "memory": 0.0, "pods": 0})
        self.assigned = {}       # uid -> (node, requests)
        self.unschedulable = set()
        self.next_bind = 0.0

    def on_pod_event(self, event):
        pod = event.obj
        uid = pod["metadata"].get("uid")
        if event.type == "ADDED" and not pod["spec"].get("nodeName"):
            delay = latency(self.c.config.get("schedule_latency"), float(self.c.config.get("start_delay", 0.05)) / 2)
            key = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"], uid)
            self.c.loop.call_later(delay, lambda: self.schedule(key))
        elif event.type == "ADDED" and pod["spec"].get("nodeName"):
            self.account(pod)
        if event.type == "DELETED" or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            if self.assigned.pop(uid, None) is not None:
                self.release(event.old or pod)
            self.unschedulable.discard(uid)

    def account(self, pod):
        uid = pod["metadata"]["uid"]
        if uid in self.assigned:
            return
        req = admission.pod_requests(pod)
        node = pod["spec"]["nodeName"]
        self.assigned[uid] = (node, req)
        u = self.usage[node]
        u["cpu"] += req["cpu"]
        u["memory"] += req["memory"]
        u["pods"] += 1

    def release(self, pod):
        node = pod["spec"].get("nodeName")
        req = admission.pod_requests(pod)
        u = self.usage[node]
        u["cpu"] -= req["cpu"]
        u["memory"] -= req["memory"]
        u["pods"] -= 1
        if self.unschedulable:
            waiting, self.unschedulable = self.unschedulable, set()
            for key in list(waiting):
                self.c.loop.call_later(0.01, lambda k=key: self.schedule(k))

    def schedule(self, key):
        ns, name, uid = key
        pod = self.c.store.get("pods", ns, name)
        if pod is None or pod["metadata"]["uid"] != uid or pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            return
        qps = self.c.config.get("scheduler_qps")
        now = time.monotonic()
        if qps:
            if now < self.next_bind:
                self.c.loop.call_later(self.next_bind - now, lambda: self.schedule(key))
                return
            self.next_bind = max(now, self.next_bind) + 1.0 / float(qps)
        node, message = self.pick(pod)
        if node is None:
            self.unschedulable.add(key)

            def cond(o):
                cs = [c for c in o["status"].get("conditions") or [] if c["type"] != "PodScheduled"]
                old = next((c for c in o["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)
                if old and old.get("message") == message:
                    return False
                cs.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                           "lastProbeTime": None, "lastTransitionTime": rfc3339()})
                o["status"]["conditions"] = cs
            self.c.store.update("pods", ns, name, cond)
            return
        self.bind(pod, node)

    def pick(self, pod):
        nodes = self.c.store.items("nodes")
        images = [c.get("image", "") for c in (pod["spec"].get("initContainers") or []) + pod["spec"]["containers"]]
        if self.c.mode == "scale" and any("unschedulable" in i for i in images):
            n = len(nodes)
            return None, (f"0/{n} nodes are available: {n} Insufficient cpu. preemption: 0/{n} nodes are available: "
                          f"{n} No preemption victims found for incoming pod.")
        req = admission.pod_requests(pod)
        selector = pod["spec"].get("nodeSelector") or {}
        reasons = collections.Counter()
        fits = []
        for node in nodes:
            name = node["metadata"]["name"]
            labels = node["metadata"].get("labels") or {}
            alloc = node["status"]["allocatable"]
            u = self.usage[name]
            from .meta import quantity
            why = []
            if any(labels.get(k) != v for k, v in selector.items()):
                why.append("node(s) didn't match Pod's node affinity/selector")
            else:
                if u["pods"] + 1 > int(alloc.get("pods", 110)):
                    why.append("Too many pods")
                if u["cpu"] + req["cpu"] > quantity(alloc.get("cpu", "0")) + 1e-9:
                    why.append("Insufficient cpu")
                if u["memory"] + req["memory"] > quantity(alloc.get("memory", "0")):
                    why.append("Insufficient memory")
            if why:
                reasons.update(why)
            else:
                fits.append((u["pods"], name))
        if not fits:
            n = len(nodes)
            text = ", ".join(f"{count} {why}" for why, count in sorted(reasons.items()))
            return None, (f"0/{n} nodes are available: {text}. preemption: 0/{n} nodes are available: "
                          f"{n} No preemption victims found for incoming pod.")
        return min(fits)[1], None

    def bind(self, pod, node):
        ns, name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]

        def fn(o):
            o["spec"]["nodeName"] = node
            cs = [c for c in o["status"].get("conditions") or [] if c["type"] != "PodScheduled"]
            cs.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": rfc3339()})
            o["status"]["conditions"] = cs
        out = self.c.store.update("pods", ns, name, fn)
        if out is not None:
            self.account(out)


class EndpointsController:
    """Endpoints and EndpointSlices for Services with a selector (ready pods as
    addresses, the others as notReadyAddresses / ready=false), and mirrored
    EndpointSlices for Services without one whose Endpoints a user wrote."""

    def __init__(self, cluster):
        self.c = cluster
        self.dirty = set()
        self.pending = False

    def on_event(self, event):
        if event.resource not in ("pods", "services", "endpoints"):
            return
        if event.resource == "endpoints" and (event.obj["metadata"].get("labels") or {}).get(
                "endpoints.kubernetes.io/managed-by") == "endpoint-controller":
            return
        if event.resource == "pods" and event.type == "MODIFIED" and event.old is not None:
            a, b = event.old, event.obj
            if (a.get("status", {}).get("podIP"), _ready(a), a["metadata"].get("labels"), a["metadata"].get("deletionTimestamp"),
                    a.get("status", {}).get("phase")) == \
                    (b.get("status", {}).get("podIP"), _ready(b), b["metadata"].get("labels"),
                     b["metadata"].get("deletionTimestamp"), b.get("status", {}).get("phase")):
                return
        self.dirty.add(event.ns)
        if not self.pending:
            self.pending = True
            self.c.loop.call_later(0.05, self.sync)

    def sync(self):
        self.pending = False
        namespaces, self.dirty = self.dirty, set()
        for ns in namespaces:
            for svc in self.c.store.items("services", ns):
                if svc["spec"].get("selector"):
                    self.sync_selector(svc)
                else:
                    self.mirror(svc)

    def sync_selector(self, svc):
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        sel = label_selector({"matchLabels": svc["spec"]["selector"]})
        pods = [p for p in self.c.store.items("pods", ns) if sel.matches(p["metadata"].get("labels"))
                and p.get("status", {}).get("podIP") and p["status"].get("phase") not in ("Succeeded", "Failed")]
        subsets, endpoints = collections.OrderedDict(), []
        for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
            ports = []
            for sp in svc["spec"].get("ports") or []:
                port = _target_port(p, sp)
                if port is not None:
                    ports.append({"name": sp.get("name", ""), "port": port, "protocol": sp.get("protocol", "TCP")})
            ports = [dict(x, name=x["name"]) if x["name"] else {k: v for k, v in x.items() if k != "name"} for x in ports]
            ready = _ready(p) and not p["metadata"].get("deletionTimestamp")
            addr = {"ip": p["status"]["podIP"], "nodeName": p["spec"].get("nodeName"),
                    "targetRef": {"kind": "Pod", "namespace": ns, "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}}
            key = json.dumps(ports, sort_keys=True)
            sub = subsets.setdefault(key, {"addresses": [], "notReadyAddresses": [], "ports": ports})
            sub["addresses" if ready or svc["spec"].get("publishNotReadyAddresses") else "notReadyAddresses"].append(addr)
            endpoints.append({"addresses": [p["status"]["podIP"]],
                              "conditions": {"ready": ready, "serving": _ready(p), "terminating": bool(p["metadata"].get("deletionTimestamp"))},
                              "nodeName": p["spec"].get("nodeName"), "targetRef": addr["targetRef"], "_ports": ports})
        subs = []
        for s in subsets.values():
            s = {k: v for k, v in s.items() if v}
            if s.get("addresses") or s.get("notReadyAddresses"):
                subs.append(s)
        ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {
            "name": name, "namespace": ns, "labels": dict(svc["metadata"].get("labels") or {},
                                                          **{"endpoints.kubernetes.io/managed-by": "endpoint-controller"})}}
        if subs:
            ep["subsets"] = subs
        self.put("endpoints", ep)
        by_ports = collections.OrderedDict()
        for e in endpoints:
            by_ports.setdefault(json.dumps(e["_ports"], sort_keys=True), []).append(
                {k: v for k, v in e.items() if k != "_ports"})
        if not by_ports:
            by_ports[json.dumps([])] = []
        self.put_slices(svc, "endpointslice-controller.k8s.io", by_ports)

    def mirror(self, svc):
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        ep = self.c.store.get("endpoints", ns, name)
        by_ports = collections.OrderedDict()
        if ep is not None:
            for s in ep.get("subsets") or []:
                ports = [{k: v for k, v in p.items() if k in ("name", "port", "protocol")} for p in s.get("ports") or []]
                for p in ports:
                    p.setdefault("protocol", "TCP")
                items = by_ports.setdefault(json.dumps(ports, sort_keys=True), [])
                for ready, addrs in ((True, s.get("addresses") or []), (False, s.get("notReadyAddresses") or [])):
                    for a in addrs:
                        e = {"addresses": [a["ip"]], "conditions": {"ready": ready}}
                        if a.get("nodeName"):
                            e["nodeName"] = a["nodeName"]
                        if a.get("targetRef"):
                            e["targetRef"] = a["targetRef"]
                        items.append(e)
        self.put_slices(svc, "endpointslicemirroring-controller.k8s.io", by_ports)

    def put(self, key, obj):
        meta = obj["metadata"]
        cur = self.c.store.get(key, meta["namespace"], meta["name"])
        if cur is None:
            self.c.store.create(key, obj)
            return
        keep = {k: v for k, v in cur.items() if k != "metadata"}
        new = {k: v for k, v in obj.items() if k != "metadata"}
        if keep == new and (cur["metadata"].get("labels") == meta.get("labels")):
            return
        out = clone(cur)
        for k in list(out):
            if k != "metadata":
                del out[k]
        out.update(clone(new))
        out["metadata"]["labels"] = meta.get("labels")
        self.c.store.replace(key, out)

    def put_slices(self, svc, manager, by_ports):
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        mine = [s for s in self.c.store.items("discovery.k8s.io/endpointslices", ns)
                if (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name
                and (s["metadata"].get("labels") or {}).get("endpointslice.kubernetes.io/managed-by") == manager]
        if manager == "endpointslicemirroring-controller.k8s.io" and not by_ports and not mine:
            return
        wanted = []
        for ports_key, eps in by_ports.items():
            ports = json.loads(ports_key)
            wanted.append({"addressType": "IPv4", "endpoints": eps, "ports": ports})
        for i, body in enumerate(wanted):
            if i < len(mine):
                cur = mine[i]
                if cur.get("endpoints") == body["endpoints"] and cur.get("ports") == body["ports"]:
                    continue
                new = clone(cur)
                new.update(clone(body))
                self.c.store.replace("discovery.k8s.io/endpointslices", new)
            else:
                obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                       "metadata": {"generateName": name + "-", "namespace": ns, "labels": {
                           "kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": manager},
                           "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": name,
                                                "uid": svc["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]}}
                obj.update(clone(body))
                self.c.store.create("discovery.k8s.io/endpointslices", obj)
        for extra in mine[len(wanted):]:
            self.c.store.remove("discovery.k8s.io/endpointslices", ns, extra["metadata"]["name"])


def _ready(pod):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions") or [])


def _target_port(pod, service_port):
    tp = service_port.get("targetPort", service_port.get("port"))
    if isinstance(tp, int):
        return tp
    if isinstance(tp, str) and tp.isdigit():
        return int(tp)
    for c in pod["spec"].get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == tp and p.get("protocol", "TCP") == service_port.get("protocol", "TCP"):
                return p["containerPort"]
    return None
