"""The HTTP side: routing, authentication, discovery, API Priority and
Fairness, faults, watch streams, logs, exec and attach upgrades, and the
/_fake control endpoints. Real HTTP/1.1 (keep-alive, chunked watch and log
streams) on 127.0.0.1; every API error is a metav1.Status."""
import json
import socket
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .meta import ApiError, clone, parse_selector, status_object
from .store import BY_KEY, BY_PATH, RESOURCES
from .websocket import Session, accept_key

LONG_RUNNING = {"watch", "exec", "attach", "portforward", "proxy"}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512
    allow_reuse_address = True

    def __init__(self, addr, handler, tls_context=None):
        self.tls_context = tls_context
        self.connections = set()
        self.conn_lock = threading.Lock()
        super().__init__(addr, handler)
        if tls_context:
            self.socket = tls_context.wrap_socket(self.socket, server_side=True)

    def rebind(self, port):
        raw = socket.socket(self.address_family, self.socket_type)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        raw.bind(("127.0.0.1", port))
        raw.listen(self.request_queue_size)
        self.socket = self.tls_context.wrap_socket(raw, server_side=True) if self.tls_context else raw

    def drop_connections(self):
        with self.conn_lock:
            conns = list(self.connections)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class RequestInfo:
    def __init__(self):
        self.verb = None
        self.resource = None     # store.Resource
        self.sub = None
        self.ns = None
        self.name = None
        self.discovery = None    # path parts of a discovery request

    def label(self):
        return self.sub if self.sub in ("exec", "log", "attach", "eviction", "binding") else self.verb

    def counter(self):
        r = self.resource.plural if self.resource else "discovery"
        return f"{self.verb} {r}{'/' + self.sub if self.sub else ''}"


def resolve(method, parts, query):
    """kube-apiserver's RequestInfoResolver, for the paths the fake serves."""
    info = RequestInfo()
    if parts[:1] == ["api"] and len(parts) <= 2 or parts[:1] == ["apis"] and len(parts) <= 3 or \
            parts[:1] in (["version"], ["healthz"], ["livez"], ["readyz"], ["openapi"]):
        info.verb, info.discovery = "get", parts
        return info
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) >= 3:
        info.ns = rest[1]
        rest = rest[2:]
    elif rest[:1] == ["namespaces"] and group == "" and len(rest) <= 3:
        pass  # the namespaces resource itself
    res = BY_PATH.get((group, version, rest[0])) if rest else None
    if res is None:
        return None
    info.resource = res
    info.name = rest[1] if len(rest) > 1 else None
    info.sub = rest[2] if len(rest) > 2 else None
    if len(rest) > 3 or (info.sub and info.sub not in res.subresources):
        return None
    watch = query.get("watch", ["false"])[0] in ("true", "1")
    if method == "GET":
        info.verb = "watch" if watch else ("get" if info.name else "list")
    elif method == "POST":
        info.verb = "create"
    elif method == "PUT":
        info.verb = "update"
    elif method == "PATCH":
        info.verb = "patch"
    elif method == "DELETE":
        info.verb = "delete" if info.name else "deletecollection"
    if info.sub == "exec" or info.sub == "attach":
        info.verb = "create" if method == "POST" else "get"
    return info


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cluster = None  # set by the entry point

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        with self.server.conn_lock:
            self.server.connections.add(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            with self.server.conn_lock:
                self.server.connections.discard(self.connection)

    # --- plumbing ---------------------------------------------------------------
    def send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in {**getattr(self, "extra_headers", {}), **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def send_error_status(self, e):
        self.send_json(e.code, e.body(), e.headers)

    def body(self):
        if getattr(self, "_body", None) is not None:
            return self._body
        length = int(self.headers.get("Content-Length") or 0)
        self._body = self.rfile.read(length) if length else b""
        return self._body

    def json_body(self):
        raw = self.body()
        try:
            return json.loads(raw) if raw else None
        except ValueError as e:
            raise ApiError(400, "BadRequest", f"error decoding body: {e}" if raw.lstrip()[:1] in (b"{", b"[")
                           else "the body of the request was in an unknown format - accepted media types include: "
                                "application/json, application/yaml, application/vnd.kubernetes.protobuf")

    def record(self, label, code):
        c = self.cluster
        if c.config.get("request_log", True):
            with c.stats.lock:
                if len(c.stats.log) < 2_000_000:
                    c.stats.log.append([getattr(self, "arrived", time.time()), self.command, label, code])
        with c.stats.lock:
            c.stats.codes[str(code)] += 1

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def authenticate(self):
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and auth[7:] in self.cluster.tokens:
            return self.cluster.tokens[auth[7:]]
        if isinstance(self.connection, ssl.SSLSocket) and self.connection.getpeercert():
            cert = self.connection.getpeercert()
            cn = next((v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"), "x509-user")
            orgs = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "organizationName"]
            return cn, orgs + ["system:authenticated"]
        return None

    def dispatch(self, method):
        self.arrived = time.time()
        self._body = None
        self.extra_headers = {}
        c = self.cluster
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/") if p]
        if parts[:1] == ["_fake"]:
            from .control import control
            return control(self, method, parts, query)
        who = self.authenticate()
        if who is None:
            c.stats.add("unauthorized")
            self.body()
            self.record("auth", 401)
            return self.send_json(401, status_object(401, "Unauthorized", "Unauthorized"))
        user, groups = who
        info = resolve(method, parts, query)
        if info is None:
            self.body()
            self.record("notfound", 404)
            return self.send_json(404, status_object(404, "NotFound", "the server could not find the requested resource"))
        if info.discovery is not None:
            from .discovery import discovery
            return discovery(self, info.discovery)
        with c.stats.lock:
            c.stats.requests[info.counter()] += 1
        label = info.label()
        if self.injected_fault(label):
            return
        release = lambda: None
        long_running = info.verb == "watch" or info.sub in ("exec", "attach") or \
            (info.sub == "log" and query.get("follow", ["false"])[0] == "true")
        if not long_running:
            release, headers, retry = c.apf.admit(user, groups)
            self.extra_headers.update(headers)
            if release is None:
                c.stats.add("throttled")
                c.stats.add("apf_rejected")
                self.body()
                self.record(label, 429)
                return self.send_json(429, status_object(429, "TooManyRequests", "Too many requests, please try again later.",
                                                         {"retryAfterSeconds": int(float(retry))}), {"Retry-After": retry})
        try:
            self.serve(method, info, query, user, groups, label)
        except ApiError as e:
            self.body()
            self.record(label, e.code)
            self.send_error_status(e)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            release()

    def injected_fault(self, label):
        c = self.cluster
        with c.lock:
            if c.config["throttle"] > 0:
                c.config["throttle"] -= 1
                fault, retry_after = 429, str(c.config["retry_after"])
            elif c.config["fail5xx"] > 0:
                c.config["fail5xx"] -= 1
                fault = 503
            else:
                return False
        self.body()
        self.record(label, fault)
        if fault == 429:
            c.stats.add("throttled")
            self.send_json(429, status_object(429, "TooManyRequests", "Too many requests, please try again later.",
                                              {"retryAfterSeconds": int(float(retry_after))}), {"Retry-After": retry_after})
        else:
            c.stats.add("failed5xx")
            self.send_json(503, status_object(503, "ServiceUnavailable", "the server is currently unable to handle the request"))
        return True

    # --- verbs ---------------------------------------------------------------------
    def serve(self, method, info, query, user, groups, label):
        c = self.cluster
        res, ns, name, sub = info.resource, info.ns, info.name, info.sub
        if res.namespaced and ns is None and info.verb not in ("list", "watch"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not res.namespaced and info.ns is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        dry_run = query.get("dryRun", [""])[0] == "All"
        key = res.key
        if res.plural == "pods" and sub in ("exec", "attach"):
            from .streams import exec_or_attach
            return exec_or_attach(self, ns, name, sub, query)
        if res.plural == "pods" and sub == "log":
            from .streams import logs
            return logs(self, ns, name, query)
        if info.verb == "watch":
            return self.watch(key, ns, query, label)
        if info.verb == "list":
            with c.lock:
                items, rv, cont, remaining = c.list(key, ns, query)
                if key == "pods":
                    c.stats.add("lists")
                body = json.dumps({"kind": res.kind + "List", "apiVersion": res.api_version,
                                   "metadata": dict({"resourceVersion": rv}, **({"continue": cont} if cont else {}),
                                                    **({"remainingItemCount": remaining} if remaining else {})),
                                   "items": items}).encode()
            self.record(label, 200)
            return self.send_raw(200, body)
        if info.verb == "get":
            with c.lock:
                if key == "pods":
                    c.stats.add("gets")
                obj = c.get(key, ns, name)
                if sub == "status" or sub is None:
                    body = json.dumps(obj).encode()
            self.record(label, 200)
            return self.send_raw(200, body)
        if info.verb == "create":
            payload = self.json_body()
            with c.lock:
                if sub == "binding":
                    out, code = c.bind(ns, name, payload or {}), 201
                elif sub == "eviction":
                    out, code = c.evict_api(ns, name, payload or {}), 201
                elif name is not None:
                    raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
                else:
                    out, code = c.create(key, ns or "", payload, dry_run), 201
                    if key == "pods" and not dry_run:
                        c.stats.add("creates")
                body = json.dumps(out).encode()
            self.record(label, code)
            return self.send_raw(code, body)
        if info.verb == "update":
            payload = self.json_body()
            with c.lock:
                body = json.dumps(c.update(key, ns or "", name, payload, sub, dry_run)).encode()
            self.record(label, 200)
            return self.send_raw(200, body)
        if info.verb == "patch":
            raw = self.body()
            with c.lock:
                body = json.dumps(c.patch(key, ns or "", name, raw, self.headers.get("Content-Type"), sub, dry_run)).encode()
            self.record(label, 200)
            return self.send_raw(200, body)
        if info.verb in ("delete", "deletecollection"):
            opts = self.json_body() or {}
            if not isinstance(opts, dict) or opts.get("kind", "DeleteOptions") != "DeleteOptions":
                raise ApiError(400, "BadRequest", "invalid DeleteOptions")
            if "gracePeriodSeconds" in query:
                opts["gracePeriodSeconds"] = int(query["gracePeriodSeconds"][0])
            if query.get("dryRun", [""])[0] == "All" or "All" in (opts.get("dryRun") or []):
                dry_run = True
            with c.lock:
                if info.verb == "delete":
                    out = c.delete(key, ns or "", name, opts, dry_run)
                    if key == "pods" and not dry_run:
                        c.stats.add("deletes")
                    if res.plural in ("pods", "namespaces") or out is None:
                        body = json.dumps(out).encode()
                    else:
                        body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                           "details": {"name": name, "group": res.group, "kind": res.plural,
                                                       "uid": out["metadata"].get("uid")}}).encode()
                else:
                    if key == "pods":
                        c.stats.add("deletecollections")
                    items = c.delete_collection(key, ns, query, opts)
                    body = json.dumps({"kind": res.kind + "List", "apiVersion": res.api_version,
                                       "metadata": {"resourceVersion": str(c.store.rv)}, "items": items}).encode()
            self.record(label, 200)
            return self.send_raw(200, body)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def send_raw(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in getattr(self, "extra_headers", {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    # --- watch -------------------------------------------------------------------
    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, key, ns, query, label):
        c = self.cluster
        res = BY_KEY[key]
        with c.lock:
            match = c.filters(key, query)
        timeout = float(query.get("timeoutSeconds", ["1800"])[0] or 1800)
        bookmarks = query.get("allowWatchBookmarks", ["false"])[0] == "true"
        initial = query.get("sendInitialEvents", ["false"])[0] == "true"
        rv_text = query.get("resourceVersion", [""])[0]
        interval = float(c.config.get("bookmark_interval") or 1.0)
        pending = []
        with c.lock:
            if key == "pods":
                c.stats.add("watches")
            generation = c.store.generation
            if rv_text in ("", "0") or initial:
                objs = sorted((o for o in c.store.items(key, ns) if match(o)),
                              key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
                pending = [json.dumps({"type": "ADDED", "object": o}).encode() + b"\n" for o in objs]
                if initial and bookmarks:
                    pending.append(json.dumps({"type": "BOOKMARK", "object": {
                        "kind": res.kind, "apiVersion": res.api_version, "metadata": {
                            "resourceVersion": str(c.store.rv), "annotations": {"k8s.io/initial-events-end": "true"}}}}).encode() + b"\n")
                index = c.store.end_index()
            else:
                try:
                    index = c.store.index_after(int(rv_text))
                except ValueError:
                    raise ApiError(400, "BadRequest", f'invalid resource version "{rv_text}"')
        self.record("watch", 200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in getattr(self, "extra_headers", {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.close_connection = True
        try:
            if index is None:
                return self.gone(rv_text)
            end = time.monotonic() + timeout
            last_sent = time.monotonic()
            while True:
                for line in pending:
                    self.chunk(line)
                    last_sent = time.monotonic()
                pending = []
                with c.lock:
                    while (index >= c.store.end_index() and generation == c.store.generation
                           and time.monotonic() < end and not (bookmarks and time.monotonic() - last_sent > interval)):
                        c.lock.wait(min(0.25, max(0.01, end - time.monotonic())))
                    if generation != c.store.generation:
                        gone = True
                    else:
                        gone = False
                        events = c.store.events_from(index)
                        if events is None:
                            gone = True
                        else:
                            index = c.store.end_index()
                            for e in events:
                                if e.resource != key or (ns is not None and e.ns != ns):
                                    continue
                                line = visible(e, match)
                                if line is not None:
                                    pending.append(line)
                        rv_now = c.store.rv
                if gone:
                    return self.gone(rv_text)
                if time.monotonic() >= end and not pending:
                    break
                if not pending and bookmarks and time.monotonic() - last_sent > interval:
                    pending = [json.dumps({"type": "BOOKMARK", "object": {
                        "kind": res.kind, "apiVersion": res.api_version, "metadata": {"resourceVersion": str(rv_now)}}}).encode() + b"\n"]
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError, ValueError):
            pass

    def gone(self, rv_text):
        c = self.cluster
        c.stats.add("gone_sent")
        event = {"type": "ERROR", "object": status_object(
            410, "Expired", f"too old resource version: {rv_text} ({c.store.rv})")}
        self.chunk(json.dumps(event).encode() + b"\n")
        self.wfile.write(b"0\r\n\r\n")


def visible(event, match):
    """The watch cache's filtering: an object that moves out of a selector is
    DELETED for that watcher, one that moves in is ADDED."""
    now = match(event.obj)
    if event.type == "ADDED":
        return event.line() if now else None
    if event.type == "DELETED":
        return event.line() if now else None
    before = event.old is not None and match(event.old)
    if now and before:
        return event.line()
    if now:
        return json.dumps({"type": "ADDED", "object": event.obj}).encode() + b"\n"
    if before:
        return json.dumps({"type": "DELETED", "object": event.obj}).encode() + b"\n"
    return None
