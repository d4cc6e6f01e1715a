"""/_fake control endpoints (no authentication; loopback only):

  GET  /_fake/config            the settings; POST merges a JSON object into them
  POST /_fake/expire            forget history: open watches get ERROR 410 Expired
  GET  /_fake/stats             counters, requests by "verb resource", codes, the request log
  GET  /_fake/pods              every pod, as stored
  POST /_fake/evict             {"namespace", "labelSelector", "names", "count", "mode": "fail"|"delete"}
  POST /_fake/restart           {"downtime": s}: connections dropped, port closed, state kept
  POST /_fake/tokens            {"<token>": {"user": u, "groups": [...]}}: more identities
  GET  /_fake/network           real mode: node IP, CIDRs, DNS, each pod's rules
  POST /_fake/drop_execs        {"command": word, "keep_stdin": bool}: every open exec stream with
                                that word in its argv ends mid-stream, without a status
"""
import json
import random
import threading

from .meta import parse_selector


def control(handler, method, parts, query):
    c = handler.cluster
    body = handler.body()
    what = parts[1] if len(parts) > 1 else ""
    try:
        payload = json.loads(body) if body else {}
    except ValueError as e:
        return handler.send_json(400, {"error": f"bad JSON: {e}"})
    if what == "config":
        with c.lock:
            if method == "POST":
                c.config.update(payload)
                c.lock.notify_all()
            return handler.send_json(200, c.config)
    if what == "expire" and method == "POST":
        with c.lock:
            return handler.send_json(200, {"compacted": c.store.expire()})
    if what == "stats":
        return handler.send_json(200, stats(c))
    if what == "pods":
        with c.lock:
            return handler.send_json(200, {"items": c.store.items("pods")})
    if what == "evict" and method == "POST":
        with c.lock:
            sel = parse_selector(payload.get("labelSelector", ""))
            pods = [p for p in c.store.items("pods", payload.get("namespace"))
                    if sel.matches(p["metadata"].get("labels")) and p.get("status", {}).get("phase") in ("Pending", "Running")
                    and not p["metadata"].get("deletionTimestamp")
                    and (not payload.get("names") or p["metadata"]["name"] in payload["names"])]
            if payload.get("count") is not None:
                pods = random.sample(pods, min(int(payload["count"]), len(pods)))
            n = c.kubelet_evict(pods, payload.get("mode", "fail"))
        return handler.send_json(200, {"evicted": n})
    if what == "restart" and method == "POST":
        downtime = float(payload.get("downtime", 1.0))
        handler.send_json(200, {"restarting": True, "downtime": downtime})
        threading.Thread(target=c.server_restart, args=(downtime,), daemon=True).start()
        return None
    if what == "tokens" and method == "POST":
        with c.lock:
            for token, who in payload.items():
                c.tokens[token] = (who["user"], list(who.get("groups", [])) + ["system:authenticated"])
        return handler.send_json(200, {"tokens": len(c.tokens)})
    if what == "drop_execs" and method == "POST":
        word = payload.get("command", "")
        with c.lock:
            hit = [s for s in c.exec_sessions if word in s.command and not s.dropped]
        for s in hit:
            s.drop(bool(payload.get("keep_stdin")))
        return handler.send_json(200, {"dropped": len(hit)})
    if what == "network":
        return handler.send_json(200, c.network.describe() if c.network else {})
    handler.send_json(404, {"error": "unknown control endpoint"})


def stats(c):
    with c.lock:
        pods = c.store.objects["pods"]
        phases = {}
        for (ns, n), p in pods.items():
            phases[n] = p.get("status", {}).get("phase")
        out = {"pods": len(pods), "resource_version": c.store.rv, "max_pods": c.max_pods,
               "phases": phases, "evictions": c.evictions, "restarts": c.restarts,
               "objects": {k: len(v) for k, v in c.store.objects.items() if v},
               "apf": c.apf.stats(), "mode": c.mode}
    with c.stats.lock:
        for k in ("creates", "deletes", "deletecollections", "lists", "watches", "gets", "execs", "logs",
                  "attaches", "throttled", "apf_rejected", "failed5xx", "unauthorized", "gone_sent"):
            out[k] = c.stats.counters.get(k, 0)
        out["requests"] = dict(c.stats.requests)
        out["codes"] = dict(c.stats.codes)
        out["log"] = list(c.stats.log)
    return out
