"""API Priority and Fairness, as far as a client can tell it apart.

Each priority level has a number of seats (concurrent non-long-running
requests) and a queue; a request that finds the seats taken waits in the
queue up to queue_wait seconds; a full queue or a wait that runs out is
answered 429 TooManyRequests with Retry-After, as the apiserver's APF filter
does. Long-running requests (watch, exec, attach, log follow) take no seat,
as in a real server. Requests are classified by FlowSchema objects stored in
the fake (subjects: User, Group, ServiceAccount; matchingPrecedence order),
else: system:masters exempt, service accounts to workload-low, the rest to
global-default. service_time holds a seat for that long (the work a real
server does), so seats / service_time is the server's throughput.
"""
import threading
import time

from .loop import latency


class Level:
    def __init__(self, name):
        self.name = name
        self.cond = threading.Condition()
        self.in_use = 0
        self.waiting = 0
        self.rejected = 0
        self.admitted = 0
        self.uid = "fake-pl-" + name


class Apf:
    def __init__(self, cluster):
        self.cluster = cluster
        self.levels = {}

    def level(self, name):
        lv = self.levels.get(name)
        if lv is None:
            lv = self.levels[name] = Level(name)
        return lv

    def classify(self, user, groups):
        """(flowschema name, uid, priority level name)."""
        c = self.cluster
        with c.lock:
            schemas = sorted(c.store.items("flowcontrol.apiserver.k8s.io/flowschemas"),
                             key=lambda s: (s["spec"].get("matchingPrecedence", 1000), s["metadata"]["name"]))
        for s in schemas:
            for rule in s["spec"].get("rules") or []:
                for subj in rule.get("subjects") or []:
                    kind = subj.get("kind")
                    if kind == "User" and subj.get("user", {}).get("name") in ("*", user):
                        return s["metadata"]["name"], s["metadata"]["uid"], s["spec"]["priorityLevelConfiguration"]["name"]
                    if kind == "Group" and subj.get("group", {}).get("name") in ["*"] + groups:
                        return s["metadata"]["name"], s["metadata"]["uid"], s["spec"]["priorityLevelConfiguration"]["name"]
                    if kind == "ServiceAccount":
                        sa = subj.get("serviceAccount", {})
                        if user == f'system:serviceaccount:{sa.get("namespace")}:{sa.get("name")}' or \
                                (sa.get("name") == "*" and user.startswith(f'system:serviceaccount:{sa.get("namespace")}:')):
                            return s["metadata"]["name"], s["metadata"]["uid"], s["spec"]["priorityLevelConfiguration"]["name"]
        if "system:masters" in groups:
            return "exempt", "fake-fs-exempt", "exempt"
        if user.startswith("system:serviceaccount:"):
            return "service-accounts", "fake-fs-service-accounts", "workload-low"
        return "global-default", "fake-fs-global-default", "global-default"

    def admit(self, user, groups):
        """Returns (release_fn, headers) or raises a 429 through the return (None, headers, retry)."""
        cfg = self.cluster.config.get("apf") or {}
        fs_name, fs_uid, pl_name = self.classify(user, groups)
        headers = {"X-Kubernetes-PF-FlowSchema-UID": fs_uid, "X-Kubernetes-PF-PriorityLevel-UID": "fake-pl-" + pl_name}
        levels = cfg.get("levels") or {}
        lcfg = levels.get(pl_name, levels.get("*")) if levels else (cfg if cfg.get("seats") else None)
        if not lcfg or pl_name == "exempt" or not lcfg.get("seats"):
            return (lambda: None), headers, None
        lv = self.level(pl_name)
        seats, qlen = int(lcfg["seats"]), int(lcfg.get("queue_length", 50))
        wait = float(lcfg.get("queue_wait", 1.0))
        with lv.cond:
            if lv.in_use >= seats:
                if lv.waiting >= qlen:
                    lv.rejected += 1
                    return None, headers, str(cfg.get("retry_after", 1))
                lv.waiting += 1
                deadline = time.monotonic() + wait
                while lv.in_use >= seats and time.monotonic() < deadline:
                    lv.cond.wait(deadline - time.monotonic())
                lv.waiting -= 1
                if lv.in_use >= seats:
                    lv.rejected += 1
                    return None, headers, str(cfg.get("retry_after", 1))
            lv.in_use += 1
            lv.admitted += 1
        service = latency(lcfg.get("service_time"))
        if service:
            time.sleep(service)

        def release():
            with lv.cond:
                lv.in_use -= 1
                lv.cond.notify()
        return release, headers, None

    def stats(self):
        return {n: {"in_use": lv.in_use, "waiting": lv.waiting, "admitted": lv.admitted, "rejected": lv.rejected}
                for n, lv in self.levels.items()}
