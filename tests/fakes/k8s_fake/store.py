"""The object store: what etcd and the watch cache are to a real API server.

One resourceVersion counter for every kind, as etcd's revision is. Objects
are immutable snapshots once stored: a writer clones, changes, and puts the
new dict; events and lists share the snapshots. History is a list of events
trimmed to `history` entries; a watch from before the oldest event kept is
answered 410 Expired, as a compacted etcd does.
"""
import json
import threading

from .meta import ApiError, clone, generated_name, new_uid, not_found, rfc3339


class Resource:
    def __init__(self, group, version, plural, kind, namespaced=True, short=(), subresources=(),
                 verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.short, self.subresources, self.verbs = namespaced, list(short), list(subresources), list(verbs)

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self):
        return f"{self.group}/{self.plural}" if self.group else self.plural

    def describe(self):
        return f"{self.plural}.{self.group}" if self.group else self.plural


RESOURCES = [Resource(*r[:5], **(r[5] if len(r) > 5 else {})) for r in [
    ("", "v1", "pods", "Pod", True, {"short": ["po"], "subresources": ["attach", "binding", "eviction", "exec", "log", "status"]}),
    ("", "v1", "services", "Service", True, {"short": ["svc"], "subresources": ["status"]}),
    ("", "v1", "endpoints", "Endpoints", True, {"short": ["ep"]}),
    ("", "v1", "secrets", "Secret", True),
    ("", "v1", "configmaps", "ConfigMap", True, {"short": ["cm"]}),
    ("", "v1", "serviceaccounts", "ServiceAccount", True, {"short": ["sa"]}),
    ("", "v1", "events", "Event", True, {"short": ["ev"]}),
    ("", "v1", "namespaces", "Namespace", False, {"short": ["ns"], "subresources": ["status"]}),
    ("", "v1", "nodes", "Node", False, {"short": ["no"], "subresources": ["status"]}),
    ("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, {"short": ["netpol"]}),
    ("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
    ("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
    ("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", False, {"subresources": ["status"]}),
    ("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", False, {"subresources": ["status"]}),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    ("apps", "v1", "deployments", "Deployment", True, {"short": ["deploy"], "subresources": ["status"]}),
    ("apps", "v1", "statefulsets", "StatefulSet", True, {"short": ["sts"], "subresources": ["status"]}),
    ("apps", "v1", "daemonsets", "DaemonSet", True, {"short": ["ds"], "subresources": ["status"]}),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, {"short": ["pdb"]}),
]]
BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KEY = {r.key: r for r in RESOURCES}


class Event:
    __slots__ = ("rv", "resource", "ns", "name", "type", "obj", "old", "_line")

    def __init__(self, rv, resource, ns, name, type_, obj, old):
        self.rv, self.resource, self.ns, self.name = rv, resource, ns, name
        self.type, self.obj, self.old, self._line = type_, obj, old, None

    def line(self):
        """The watch event as one JSON line, serialized once for every watcher."""
        if self._line is None:
            self._line = json.dumps({"type": self.type, "object": self.obj}).encode() + b"\n"
        return self._line


class Store:
    def __init__(self, lock, history=200000):
        self.lock = lock                  # a Condition shared with the whole fake
        self.rv = 100
        self.objects = {r.key: {} for r in RESOURCES}
        self.events = []                  # absolute index = base + list index
        self.base = 0
        self.history = history
        self.compacted_rv = 0
        self.generation = 0               # bumped by expire(): open watches end with 410
        self.subscribers = []             # fn(event), called under the lock; must only queue work

    # --- reads (caller holds the lock) -------------------------------------
    def get(self, key, ns, name):
        return self.objects[key].get((ns or "", name))

    def items(self, key, ns=None):
        table = self.objects[key]
        if ns is None:
            return list(table.values())
        return [o for (n, _), o in table.items() if n == ns]

    # --- writes (caller holds the lock) -------------------------------------
    def _emit(self, key, type_, obj, old):
        meta = obj["metadata"]
        event = Event(self.rv, key, meta.get("namespace", ""), meta["name"], type_, obj, old)
        self.events.append(event)
        if len(self.events) > self.history + self.history // 4:
            drop = len(self.events) - self.history
            self.compacted_rv = self.events[drop - 1].rv
            del self.events[:drop]
            self.base += drop
        for fn in self.subscribers:
            fn(event)
        self.lock.notify_all()

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def create(self, key, obj):
        """Assigns name (generateName), uid, timestamps, resourceVersion; 409 if taken."""
        meta = obj.setdefault("metadata", {})
        table = self.objects[key]
        ns = meta.get("namespace", "")
        if not meta.get("name"):
            for _ in range(8):
                meta["name"] = generated_name(meta["generateName"])
                if (ns, meta["name"]) not in table:
                    break
            else:
                raise ApiError(409, "AlreadyExists", "failed to generate a unique name")
        if (ns, meta["name"]) in table:
            r = BY_KEY[key]
            raise ApiError(409, "AlreadyExists", f'{r.describe()} "{meta["name"]}" already exists',
                           {"name": meta["name"], "group": r.group, "kind": r.plural})
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = rfc3339()
        if "spec" in obj:
            meta["generation"] = 1
        meta["resourceVersion"] = self.next_rv()
        table[(ns, meta["name"])] = obj
        self._emit(key, "ADDED", obj, None)
        return obj

    def replace(self, key, obj):
        """Stores a new snapshot of an existing object (MODIFIED)."""
        meta = obj["metadata"]
        k = (meta.get("namespace", ""), meta["name"])
        old = self.objects[key].get(k)
        if old is None:
            raise not_found(BY_KEY[key].describe(), meta["name"])
        if "spec" in obj and obj.get("spec") != old.get("spec"):
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        meta["resourceVersion"] = self.next_rv()
        self.objects[key][k] = obj
        self._emit(key, "MODIFIED", obj, old)
        return obj

    def remove(self, key, ns, name):
        old = self.objects[key].pop((ns or "", name), None)
        if old is None:
            return None
        gone = clone(old)
        gone["metadata"]["resourceVersion"] = self.next_rv()
        self._emit(key, "DELETED", gone, old)
        return gone

    def update(self, key, ns, name, fn):
        """Clones the object, applies fn(obj) (which may return False: no change), stores it."""
        cur = self.get(key, ns, name)
        if cur is None:
            return None
        new = clone(cur)
        if fn(new) is False or new == cur:
            return cur
        return self.replace(key, new)

    def expire(self):
        """Forgets all history: every open watch gets 410, old resourceVersions are Gone."""
        self.compacted_rv = self.rv
        self.base += len(self.events)
        self.events = []
        self.generation += 1
        self.lock.notify_all()
        return self.compacted_rv

    # --- watch support ---------------------------------------------------------
    def index_after(self, rv):
        """Absolute index of the first event newer than rv; None if rv is compacted."""
        if rv < self.compacted_rv:
            return None
        lo, hi = 0, len(self.events)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.events[mid].rv <= rv:
                lo = mid + 1
            else:
                hi = mid
        return self.base + lo

    def events_from(self, index):
        """Events from absolute index on; None if they were trimmed."""
        if index < self.base:
            return None
        return self.events[index - self.base:]

    def end_index(self):
        return self.base + len(self.events)
