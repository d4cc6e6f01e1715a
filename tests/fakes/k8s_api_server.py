#!/usr/bin/env python3
"""A fake Kubernetes API server for the k8s backend's tests and benchmark.

Written from the Kubernetes API reference (core/v1 Pod, metav1.Status,
WatchEvent, DeleteOptions) and the exec WebSocket channel protocol
(v4.channel.k8s.io / v5.channel.k8s.io, KEP-4006). It speaks real HTTP/1.1 and
RFC 6455 on 127.0.0.1 only. Pods go Pending -> (scheduled) -> Running through
watch events; images whose name contains "unschedulable" stay Pending with
PodScheduled=False/Unschedulable, and "no-such-image" goes ErrImagePull ->
ImagePullBackOff. A fake kubelet runs exec commands as host processes (the
tests control every command), so the caller sees real stdout/stderr/exit codes.

Faults for tests, set with POST /_fake/config (JSON merged into the config):
  throttle: N      the next N API requests get 429 + Retry-After: retry_after
  fail5xx: N       the next N API requests get 503
  exec_protocols   subprotocols the exec endpoint accepts, in its preference
  exec_drop        exec connections end without a status frame
  start_delay      seconds from create to Running
POST /_fake/expire compacts history: open watches get an ERROR 410 event and
older resourceVersions are Gone. GET /_fake/stats returns counters and a
request log. Prints "PORT <n>" on stdout once listening.
"""
import argparse
import base64
import hashlib
import heapq
import json
import os
import random
import shutil
import signal
import ssl
import string
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_object(code, reason, message, details=None):
    obj = {"kind": "Status", "apiVersion": "v1", "metadata": {},
           "status": "Failure", "message": message, "reason": reason, "code": code}
    if details:
        obj["details"] = details
    return obj


class Cluster:
    def __init__(self, token):
        self.token = token
        self.cond = threading.Condition()
        self.rv = 100
        self.pods = {}            # name -> pod
        self.events = []          # (rv, type, pod snapshot)
        self.compacted_rv = 0
        self.expire_generation = 0
        self.config = {"throttle": 0, "retry_after": 1, "fail5xx": 0,
                       "exec_protocols": ["v5.channel.k8s.io", "v4.channel.k8s.io"],
                       "exec_drop": False, "start_delay": 0.05,
                       "pod_log": "keep-alive started\nline 2\nline 3\n"}
        self.stats = {"creates": 0, "deletes": 0, "deletecollections": 0, "lists": 0,
                      "watches": 0, "gets": 0, "execs": 0, "logs": 0, "throttled": 0,
                      "failed5xx": 0, "unauthorized": 0, "gone_sent": 0, "max_pods": 0}
        self.log = []             # [time, method, kind, code]
        self.timers = []          # heap of (when, seq, fn)
        self.timer_seq = 0
        self.root = tempfile.mkdtemp(prefix="fake-kubelet-")
        self.processes = set()  # exec'd commands still running, killed at shutdown
        threading.Thread(target=self._timer_loop, daemon=True).start()

    # --- time-driven pod lifecycle -------------------------------------
    def schedule(self, delay, fn):
        with self.cond:
            self.timer_seq += 1
            heapq.heappush(self.timers, (time.monotonic() + delay, self.timer_seq, fn))
            self.cond.notify_all()

    def _timer_loop(self):
        while True:
            with self.cond:
                while not self.timers or self.timers[0][0] > time.monotonic():
                    timeout = self.timers[0][0] - time.monotonic() if self.timers else None
                    self.cond.wait(timeout)
                _, _, fn = heapq.heappop(self.timers)
                fn()

    def _next_rv(self):
        self.rv += 1
        return str(self.rv)

    def emit(self, kind, pod):
        """Caller holds cond."""
        pod["metadata"]["resourceVersion"] = self._next_rv()
        self.events.append((self.rv, kind, json.loads(json.dumps(pod))))
        self.cond.notify_all()

    def create(self, pod):
        meta = pod.setdefault("metadata", {})
        with self.cond:
            name = meta.get("name")
            if not name:
                name = meta["generateName"] + "".join(
                    random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
            if name in self.pods:
                return 409, status_object(409, "AlreadyExists", f'pods "{name}" already exists')
            meta["name"] = name
            meta["uid"] = "%08x-0000-4000-8000-%012x" % (random.getrandbits(32), random.getrandbits(48))
            meta["creationTimestamp"] = now_rfc3339()
            pod["status"] = {"phase": "Pending", "qosClass": qos_class(pod)}
            self.pods[name] = pod
            self.stats["creates"] += 1
            self.stats["max_pods"] = max(self.stats["max_pods"], len(self.pods))
            self.emit("ADDED", pod)
            snapshot = json.loads(json.dumps(pod))
        image = pod["spec"]["containers"][0]["image"]
        delay = float(self.config["start_delay"])
        self.schedule(delay / 2, lambda: self._progress(name, image, 1))
        self.schedule(delay, lambda: self._progress(name, image, 2))
        deadline = pod["spec"].get("activeDeadlineSeconds")
        if deadline:
            self.schedule(float(deadline), lambda: self._deadline(name))
        return 201, snapshot

    def _progress(self, name, image, step):
        """Caller holds cond (timer loop)."""
        pod = self.pods.get(name)
        if pod is None or pod["status"]["phase"] != "Pending":
            return
        status = pod["status"]
        container = pod["spec"]["containers"][0]["name"]
        if "unschedulable" in image:
            if step == 1:
                status["conditions"] = [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 "
                               "nodes are available: 3 No preemption victims found for "
                               "incoming pod.",
                    "lastTransitionTime": now_rfc3339()}]
                self.emit("MODIFIED", pod)
            return
        status["conditions"] = [{"type": "PodScheduled", "status": "True",
                                 "lastTransitionTime": now_rfc3339()}]
        pod["spec"]["nodeName"] = "fake-node-1"
        if "no-such-image" in image:
            reason, message = ("ErrImagePull", f'failed to pull and unpack image "{image}": not found') \
                if step == 1 else ("ImagePullBackOff", f'Back-off pulling image "{image}"')
            status["containerStatuses"] = [{
                "name": container, "image": image, "imageID": "", "ready": False,
                "restartCount": 0, "started": False,
                "state": {"waiting": {"reason": reason, "message": message}}}]
        elif step == 1:
            status["containerStatuses"] = [{
                "name": container, "image": image, "imageID": "", "ready": False,
                "restartCount": 0, "started": False,
                "state": {"waiting": {"reason": "ContainerCreating"}}}]
        else:
            status["phase"] = "Running"
            status["startTime"] = now_rfc3339()
            status["podIP"] = "10.0.0.%d" % random.randint(2, 250)
            status["conditions"].append({"type": "Ready", "status": "True",
                                         "lastTransitionTime": now_rfc3339()})
            status["containerStatuses"] = [{
                "name": container, "image": image, "imageID": "sha256:" + "0" * 64,
                "containerID": "containerd://" + "%064x" % random.getrandbits(256),
                "ready": True, "restartCount": 0, "started": True,
                "state": {"running": {"startedAt": now_rfc3339()}}}]
        self.emit("MODIFIED", pod)

    def _deadline(self, name):
        pod = self.pods.get(name)
        if pod is None or pod["status"]["phase"] not in ("Pending", "Running"):
            return
        pod["status"].update({"phase": "Failed", "reason": "DeadlineExceeded",
                              "message": "Pod was active on the node longer than the "
                                         "specified deadline"})
        self.emit("MODIFIED", pod)

    def delete(self, name):
        with self.cond:
            pod = self.pods.pop(name, None)
            if pod is None:
                return None
            pod["metadata"]["deletionTimestamp"] = now_rfc3339()
            pod["metadata"]["deletionGracePeriodSeconds"] = 0
            self.stats["deletes"] += 1
            self.emit("DELETED", pod)
            return json.loads(json.dumps(pod))


def qos_class(pod):
    containers = pod.get("spec", {}).get("containers", [])
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources", {})
        lim, req = res.get("limits", {}), res.get("requests", {})
        if not lim.get("cpu") or not lim.get("memory") or req != lim:
            guaranteed = False
    return "Guaranteed" if guaranteed else "Burstable"


def parse_selector(text):
    """Equality-based label selectors: k=v, k==v, k!=v, comma separated."""
    rules = []
    for part in filter(None, (text or "").split(",")):
        if "!=" in part:
            k, v = part.split("!=", 1)
            rules.append((k.strip(), v.strip(), False))
        elif "==" in part:
            k, v = part.split("==", 1)
            rules.append((k.strip(), v.strip(), True))
        elif "=" in part:
            k, v = part.split("=", 1)
            rules.append((k.strip(), v.strip(), True))
        else:
            raise ValueError("unable to parse requirement: " + part)
    return rules


def matches(pod, rules):
    labels = pod.get("metadata", {}).get("labels", {}) or {}
    return all((labels.get(k) == v) == want for k, v, want in rules)


def validate_pod(pod):
    """The subset of API validation forge's pods exercise; 422 Invalid otherwise."""
    causes = []
    if pod.get("apiVersion") != "v1" or pod.get("kind") != "Pod":
        causes.append(("FieldValueInvalid", "kind", "must be v1 Pod"))
    meta = pod.get("metadata") or {}
    if not meta.get("name") and not meta.get("generateName"):
        causes.append(("FieldValueRequired", "metadata.name", "name or generateName is required"))
    for k, v in (meta.get("labels") or {}).items():
        if not isinstance(v, str) or len(v) > 63 or (v and not (v[0].isalnum() and v[-1].isalnum())) \
                or any(not (c.isalnum() or c in "-_.") for c in v):
            causes.append(("FieldValueInvalid", f"metadata.labels[{k}]", "invalid label value"))
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if not containers:
        causes.append(("FieldValueRequired", "spec.containers", "Required value"))
    for i, c in enumerate(containers):
        if not c.get("name"):
            causes.append(("FieldValueRequired", f"spec.containers[{i}].name", "Required value"))
        if not c.get("image"):
            causes.append(("FieldValueRequired", f"spec.containers[{i}].image", "Required value"))
    if spec.get("restartPolicy", "Always") not in ("Always", "OnFailure", "Never"):
        causes.append(("FieldValueNotSupported", "spec.restartPolicy", "Unsupported value"))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or ads <= 0):
        causes.append(("FieldValueInvalid", "spec.activeDeadlineSeconds", "must be positive"))
    if not causes:
        return None
    name = meta.get("name") or meta.get("generateName") or ""
    return status_object(422, "Invalid", f'Pod "{name}" is invalid: ' +
                         "; ".join(f"{f}: {m}" for _, f, m in causes),
                         {"name": name, "kind": "Pod",
                          "causes": [{"reason": r, "field": f, "message": m} for r, f, m in causes]})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cluster = None  # set in main

    def log_message(self, fmt, *args):
        pass

    # --- plumbing ------------------------------------------------------
    def _send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self, kind, code):
        # The time the request arrived, not the time it was answered: a watch
        # or a slow create is answered long after the client sent it.
        with self.cluster.cond:
            self.cluster.log.append([getattr(self, "arrived", time.time()), self.command, kind, code])

    def _route(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        parts = [p for p in url.path.split("/") if p]
        return url.path, parts, query

    def _fault(self, kind):
        """Injected 429/503; returns True when the request was answered."""
        c = self.cluster
        with c.cond:
            if c.config["throttle"] > 0:
                c.config["throttle"] -= 1
                c.stats["throttled"] += 1
                retry_after = str(c.config["retry_after"])
                fault = 429
            elif c.config["fail5xx"] > 0:
                c.config["fail5xx"] -= 1
                c.stats["failed5xx"] += 1
                fault = 503
            else:
                return False
        self._body()
        self._record(kind, fault)
        if fault == 429:
            self._send_json(429, status_object(
                429, "TooManyRequests", "Too many requests, please try again later.",
                {"retryAfterSeconds": int(float(retry_after))}), {"Retry-After": retry_after})
        else:
            self._send_json(503, status_object(503, "ServiceUnavailable",
                                               "the server is currently unable to handle the request"))
        return True

    def _authorized(self):
        if self.headers.get("Authorization") == "Bearer " + self.cluster.token:
            return True
        if isinstance(self.connection, ssl.SSLSocket) and self.connection.getpeercert():
            return True  # x509 client authentication
        with self.cluster.cond:
            self.cluster.stats["unauthorized"] += 1
        self._body()
        self._send_json(401, status_object(401, "Unauthorized", "Unauthorized"))
        return False

    # --- verbs -----------------------------------------------------------
    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method):
        self.arrived = time.time()
        path, parts, query = self._route()
        if parts[:1] == ["_fake"]:
            return self._control(method, parts, query)
        if not self._authorized():
            return
        # /api/v1/namespaces/{ns}/pods[/{name}[/{sub}]]
        if len(parts) < 5 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods":
            self._body()
            return self._send_json(404, status_object(404, "NotFound", "the server could not find the requested resource"))
        ns = parts[3]
        name = parts[5] if len(parts) > 5 else None
        sub = parts[6] if len(parts) > 6 else None
        if sub == "exec":
            return self._exec(ns, name, query)
        watch = query.get("watch", ["false"])[0] in ("true", "1")
        kind = "watch" if watch else (sub or ("pod" if name else "collection"))
        if self._fault(kind):
            return
        if method == "GET" and watch:
            return self._watch(ns, query)
        if method == "GET" and name is None:
            return self._list(ns, query)
        if method == "POST" and name is None:
            return self._create(ns)
        if method == "DELETE" and name is None:
            return self._delete_collection(ns, query)
        if method == "GET" and sub == "log":
            return self._logs(ns, name, query)
        if method == "GET" and sub is None:
            return self._get(ns, name)
        if method == "DELETE" and sub is None:
            return self._delete(ns, name)
        self._body()
        self._send_json(405, status_object(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"))

    def _pods_in(self, ns, rules):
        return [p for p in self.cluster.pods.values()
                if p["metadata"].get("namespace") == ns and matches(p, rules)]

    def _create(self, ns):
        try:
            pod = json.loads(self._body())
        except ValueError as e:
            self._record("create", 400)
            return self._send_json(400, status_object(400, "BadRequest", f"error decoding body: {e}"))
        invalid = validate_pod(pod)
        if invalid:
            self._record("create", 422)
            return self._send_json(422, invalid)
        pod["metadata"]["namespace"] = ns
        code, obj = self.cluster.create(pod)
        self._record("create", code)
        self._send_json(code, obj)

    def _get(self, ns, name):
        with self.cluster.cond:
            self.cluster.stats["gets"] += 1
            pod = self.cluster.pods.get(name)
            pod = json.loads(json.dumps(pod)) if pod else None
        self._record("get", 200 if pod else 404)
        if not pod:
            return self._send_json(404, status_object(404, "NotFound", f'pods "{name}" not found',
                                                      {"name": name, "kind": "pods"}))
        self._send_json(200, pod)

    def _delete(self, ns, name):
        body = self._body()
        if body:
            try:
                options = json.loads(body)
                assert options.get("kind", "DeleteOptions") == "DeleteOptions"
            except (ValueError, AssertionError):
                return self._send_json(400, status_object(400, "BadRequest", "invalid DeleteOptions"))
        pod = self.cluster.delete(name)
        self._record("delete", 200 if pod else 404)
        if pod is None:
            return self._send_json(404, status_object(404, "NotFound", f'pods "{name}" not found',
                                                      {"name": name, "kind": "pods"}))
        self._send_json(200, pod)

    def _selector(self, query):
        try:
            return parse_selector(query.get("labelSelector", [""])[0])
        except ValueError as e:
            self._send_json(400, status_object(400, "BadRequest", str(e)))
            return None

    def _list(self, ns, query):
        rules = self._selector(query)
        if rules is None:
            return
        with self.cluster.cond:
            self.cluster.stats["lists"] += 1
            items = json.loads(json.dumps(self._pods_in(ns, rules)))
            rv = str(self.cluster.rv)
        self._record("list", 200)
        self._send_json(200, {"kind": "PodList", "apiVersion": "v1",
                              "metadata": {"resourceVersion": rv}, "items": items})

    def _delete_collection(self, ns, query):
        self._body()
        rules = self._selector(query)
        if rules is None:
            return
        with self.cluster.cond:
            names = [p["metadata"]["name"] for p in self._pods_in(ns, rules)]
            self.cluster.stats["deletecollections"] += 1
        deleted = [p for p in (self.cluster.delete(n) for n in names) if p]
        self._record("deletecollection", 200)
        self._send_json(200, {"kind": "PodList", "apiVersion": "v1",
                              "metadata": {"resourceVersion": str(self.cluster.rv)}, "items": deleted})

    def _logs(self, ns, name, query):
        with self.cluster.cond:
            self.cluster.stats["logs"] += 1
            exists = name in self.cluster.pods
            text = self.cluster.config["pod_log"]
        if not exists:
            return self._send_json(404, status_object(404, "NotFound", f'pods "{name}" not found'))
        lines = text.splitlines(keepends=True)
        if "tailLines" in query:
            lines = lines[-int(query["tailLines"][0]):]
        body = "".join(lines).encode()
        if "limitBytes" in query:
            body = body[:int(query["limitBytes"][0])]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # --- watch -----------------------------------------------------------
    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, ns, query):
        rules = self._selector(query)
        if rules is None:
            return
        c = self.cluster
        timeout = float(query.get("timeoutSeconds", ["1800"])[0])
        bookmarks = query.get("allowWatchBookmarks", ["false"])[0] == "true"
        rv_text = query.get("resourceVersion", [""])[0]
        self._record("watch", 200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        with c.cond:
            c.stats["watches"] += 1
            generation = c.expire_generation
            pending = []
            if rv_text in ("", "0"):
                # No resourceVersion: synthetic ADDED events for what exists now.
                pending = [("ADDED", json.loads(json.dumps(p))) for p in self._pods_in(ns, rules)]
                since = c.rv
            elif int(rv_text) < c.compacted_rv:
                since = None
            else:
                since = int(rv_text)
            index = next((i for i, e in enumerate(c.events) if since is not None and e[0] > since),
                         len(c.events))
        try:
            if since is None:
                return self._gone(rv_text)
            end = time.monotonic() + timeout
            last_sent = time.monotonic()
            while True:
                for kind, obj in pending:
                    self._chunk(json.dumps({"type": kind, "object": obj}).encode() + b"\n")
                    last_sent = time.monotonic()
                with c.cond:
                    while (index >= len(c.events) and generation == c.expire_generation
                           and time.monotonic() < end
                           and not (bookmarks and time.monotonic() - last_sent > 1.0)):
                        c.cond.wait(min(0.25, max(0.01, end - time.monotonic())))
                    if generation != c.expire_generation:
                        gone = True
                    else:
                        gone = False
                        pending = [(kind, obj) for _, kind, obj in c.events[index:]
                                   if obj["metadata"].get("namespace") == ns and matches(obj, rules)]
                        index = len(c.events)
                        rv_now = c.rv
                if gone:
                    return self._gone(rv_text)
                if time.monotonic() >= end and not pending:
                    break
                if not pending and bookmarks and time.monotonic() - last_sent > 1.0:
                    pending = [("BOOKMARK", {"kind": "Pod", "apiVersion": "v1",
                                             "metadata": {"resourceVersion": str(rv_now)}})]
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _gone(self, rv_text):
        with self.cluster.cond:
            self.cluster.stats["gone_sent"] += 1
            current = self.cluster.rv
        event = {"type": "ERROR", "object": status_object(
            410, "Expired", f"too old resource version: {rv_text} ({current})")}
        self._chunk(json.dumps(event).encode() + b"\n")
        self.wfile.write(b"0\r\n\r\n")

    # --- exec over WebSocket --------------------------------------------
    def _exec(self, ns, name, query):
        c = self.cluster
        if self._fault("exec"):
            return
        with c.cond:
            c.stats["execs"] += 1
            pod = c.pods.get(name)
            phase = pod["status"]["phase"] if pod else None
            accepted = list(c.config["exec_protocols"])
            drop = c.config["exec_drop"]
        if self.headers.get("Upgrade", "").lower() != "websocket" or not self.headers.get("Sec-WebSocket-Key"):
            return self._send_json(400, status_object(400, "BadRequest", "Upgrade request required"))
        if pod is None:
            return self._send_json(404, status_object(404, "NotFound", f'pods "{name}" not found'))
        if phase != "Running":
            return self._send_json(400, status_object(
                400, "BadRequest", f"unable to upgrade connection: pod {name} is not running (phase {phase})"))
        offered = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        chosen = next((p for p in accepted if p in offered), None)
        if chosen is None:
            return self._send_json(400, status_object(400, "BadRequest", "no supported subprotocol offered: " + ", ".join(offered)))
        command = query.get("command", [])
        if not command:
            return self._send_json(400, status_object(400, "BadRequest", "you must specify at least 1 command"))
        use_stdin = query.get("stdin", ["false"])[0] in ("true", "1")
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", chosen)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        self._record("exec", 101)
        ExecSession(self, chosen, command, use_stdin, drop, c.root).run()


class ExecSession:
    def __init__(self, handler, protocol, command, use_stdin, drop, root):
        self.h = handler
        self.protocol = protocol
        self.command = command
        self.use_stdin = use_stdin
        self.drop = drop
        self.root = root
        self.write_lock = threading.Lock()
        self.closed_by_client = threading.Event()

    def send(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([n])
        elif n <= 0xFFFF:
            header += bytes([126]) + struct.pack(">H", n)
        else:
            header += bytes([127]) + struct.pack(">Q", n)
        with self.write_lock:
            try:
                self.h.wfile.write(header + payload)
                self.h.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, ValueError):
                pass

    def read_frame(self):
        head = self.h.rfile.read(2)
        if len(head) < 2:
            return None
        opcode = head[0] & 0x0F
        masked = head[1] & 0x80
        n = head[1] & 0x7F
        if n == 126:
            n = struct.unpack(">H", self.h.rfile.read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self.h.rfile.read(8))[0]
        if not masked:
            raise ValueError("client frame not masked (RFC 6455 5.1)")
        mask = self.h.rfile.read(4)
        data = bytearray(self.h.rfile.read(n))
        for i in range(len(data)):
            data[i] ^= mask[i % 4]
        return opcode, bytes(data)

    def run(self):
        try:
            proc = subprocess.Popen(self.command, cwd=self.root,
                                    stdin=subprocess.PIPE if self.use_stdin else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            status = {"metadata": {}, "status": "Failure", "reason": "InternalError",
                      "message": f"failed to exec in container: {e}"}
            self.send(2, bytes([3]) + json.dumps(status).encode())
            self.send(8, struct.pack(">H", 1000))
            return
        # An empty message on the lowest stream the client asked for says "ready".
        self.send(2, bytes([0 if self.use_stdin else 1]))
        with self.h.cluster.cond:
            self.h.cluster.processes.add(proc)
        readers = [threading.Thread(target=self.pump, args=(proc.stdout, 1)),
                   threading.Thread(target=self.pump, args=(proc.stderr, 2))]
        for t in readers:
            t.start()
        client = threading.Thread(target=self.from_client, args=(proc,), daemon=True)
        client.start()
        code = proc.wait()
        with self.h.cluster.cond:
            self.h.cluster.processes.discard(proc)
        for t in readers:
            t.join()
        if self.drop:
            self.h.connection.shutdown(2)
            return
        if code == 0:
            status = {"metadata": {}, "status": "Success"}
        else:
            status = {"metadata": {}, "status": "Failure",
                      "message": f"command terminated with non-zero exit code: error executing "
                                 f"command {self.command}, exit code {code}",
                      "reason": "NonZeroExitCode",
                      "details": {"causes": [{"reason": "ExitCode", "message": str(code if code >= 0 else 128 - code)}]}}
        self.send(2, bytes([3]) + json.dumps(status).encode())
        self.send(8, struct.pack(">H", 1000))
        self.closed_by_client.wait(2)

    def pump(self, stream, channel):
        while True:
            data = stream.read1(32768) if hasattr(stream, "read1") else stream.read(32768)
            if not data:
                return
            self.send(2, bytes([channel]) + data)

    def from_client(self, proc):
        try:
            while True:
                frame = self.read_frame()
                if frame is None:
                    break
                opcode, data = frame
                if opcode == 8:
                    break
                if opcode == 9:
                    self.send(10, data)
                    continue
                if opcode not in (1, 2) or not data:
                    continue
                channel = data[0]
                if channel == 0 and proc.stdin:
                    try:
                        proc.stdin.write(data[1:])
                        proc.stdin.flush()
                    except BrokenPipeError:
                        pass
                elif channel == 255 and self.protocol == "v5.channel.k8s.io" and data[1:2] == b"\x00":
                    if proc.stdin:
                        proc.stdin.close()
        except (ValueError, OSError, struct.error):
            pass
        finally:
            self.closed_by_client.set()
            if proc.stdin and not proc.stdin.closed:
                try:
                    proc.stdin.close()
                except OSError:
                    pass


def _control(self, method, parts, query):
    c = self.cluster
    body = self._body()
    what = parts[1] if len(parts) > 1 else ""
    if what == "config" and method == "POST":
        with c.cond:
            c.config.update(json.loads(body or b"{}"))
            return self._send_json(200, c.config)
    if what == "expire" and method == "POST":
        with c.cond:
            c.compacted_rv = c.rv + 1
            c.expire_generation += 1
            c.cond.notify_all()
        return self._send_json(200, {"compacted": c.compacted_rv})
    if what == "stats":
        with c.cond:
            out = dict(c.stats)
            out["pods"] = len(c.pods)
            out["resource_version"] = c.rv
            out["log"] = list(c.log)
            out["phases"] = {n: p["status"]["phase"] for n, p in c.pods.items()}
        return self._send_json(200, out)
    if what == "pods":
        with c.cond:
            return self._send_json(200, {"items": list(c.pods.values())})
    self._send_json(404, {"error": "unknown control endpoint"})


Handler._control = _control


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token", required=True, help="the bearer token clients must send")
    parser.add_argument("--start-delay", type=float, default=0.05)
    parser.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate")
    parser.add_argument("--tls-key", help="and this PEM key")
    parser.add_argument("--tls-client-ca", help="require client certificates signed by this CA; "
                        "a verified certificate authenticates like the token")
    args = parser.parse_args()
    Handler.cluster = Cluster(args.token)
    Handler.cluster.config["start_delay"] = args.start_delay
    server = Server(("127.0.0.1", 0), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.tls_client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(args.tls_client_ca)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("PORT", server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        for proc in list(Handler.cluster.processes):
            proc.kill()
        shutil.rmtree(Handler.cluster.root, ignore_errors=True)


if __name__ == "__main__":
    main()
