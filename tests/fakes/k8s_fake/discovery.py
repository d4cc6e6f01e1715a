"""Discovery: /api, /apis, /apis/{group}[/{version}], /version, health checks.
Legacy (non-aggregated) documents: a client that asks for aggregated
discovery falls back to them by their Content-Type, as kubectl does."""
import collections

from .meta import status_object
from .store import RESOURCES

VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.0-forge-fake", "gitCommit": "fake",
           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.22",
           "compiler": "gc", "platform": "linux/amd64"}


def resource_list(group, version):
    out = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        out.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced, "kind": r.kind,
                    "verbs": r.verbs, **({"shortNames": r.short} if r.short else {})})
        for sub in r.subresources:
            verbs = {"log": ["get"], "exec": ["create", "get"], "attach": ["create", "get"], "eviction": ["create"],
                     "binding": ["create"], "status": ["get", "patch", "update"]}[sub]
            kind = {"eviction": "Eviction", "binding": "Binding", "exec": "PodExecOptions",
                    "attach": "PodAttachOptions", "log": "Pod"}.get(sub, r.kind)
            out.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                        "kind": kind, "verbs": verbs})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": out}


def groups():
    by = collections.OrderedDict()
    for r in RESOURCES:
        if r.group:
            by.setdefault(r.group, r.version)
    return [{"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
             "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}} for g, v in by.items()]


def discovery(handler, parts):
    host = f"127.0.0.1:{handler.server.server_address[1]}"
    if parts in (["healthz"], ["livez"], ["readyz"]):
        handler.record("health", 200)
        return handler.send_raw(200, b"ok", "text/plain; charset=utf-8")
    if parts == ["version"]:
        body = VERSION
    elif parts == ["api"]:
        body = {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]}
    elif parts == ["api", "v1"]:
        body = resource_list("", "v1")
    elif parts == ["apis"]:
        body = {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups()}
    elif len(parts) == 2 and parts[0] == "apis":
        match = [g for g in groups() if g["name"] == parts[1]]
        if not match:
            return handler.send_json(404, status_object(404, "NotFound", "the server could not find the requested resource"))
        body = dict({"kind": "APIGroup", "apiVersion": "v1"}, **match[0])
    elif len(parts) == 3 and parts[0] == "apis":
        body = resource_list(parts[1], parts[2])
        if not body["resources"]:
            return handler.send_json(404, status_object(404, "NotFound", "the server could not find the requested resource"))
    else:
        handler.record("discovery", 404)
        return handler.send_json(404, status_object(404, "NotFound", "the server could not find the requested resource"))
    handler.record("discovery", 200)
    handler.send_json(200, body)
