#!/usr/bin/env python3
"""A small Kubernetes API client for the e2e tests of the fake API server
(standard library only): create, get, list, delete, wait, logs, watch, and
exec/attach over WebSocket (v5.channel.k8s.io, or v4 with --protocol v4).
Not forge's client: the tests check the fake with it, and with kubectl when
kubectl is installed.

  k8s_client.py --server URL --token T [-n NS] create FILE|-
  k8s_client.py ... get RESOURCE [NAME]            (JSON on stdout)
  k8s_client.py ... delete RESOURCE NAME [--grace S]
  k8s_client.py ... wait pods NAME --for phase=Succeeded|condition=Ready [--timeout S]
  k8s_client.py ... logs POD [-c C] [--tail N] [--limit-bytes N] [--follow] [--previous]
  k8s_client.py ... watch RESOURCE [--rv RV] [--timeout S] [-l SELECTOR]  (events as JSON lines)
  k8s_client.py ... exec POD [-c C] [-i] [--protocol v4|v5] -- CMD...  (exits with CMD's status)
Exit codes: the command's for exec; 0 ok; 1 the API said no (its Status on stderr); 2 timeout.
"""
import argparse
import base64
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
import http.client

PATHS = {"pods": "api/v1", "services": "api/v1", "endpoints": "api/v1", "secrets": "api/v1",
         "configmaps": "api/v1", "namespaces": "api/v1", "nodes": "api/v1", "serviceaccounts": "api/v1",
         "events": "api/v1", "networkpolicies": "apis/networking.k8s.io/v1",
         "endpointslices": "apis/discovery.k8s.io/v1", "runtimeclasses": "apis/node.k8s.io/v1",
         "flowschemas": "apis/flowcontrol.apiserver.k8s.io/v1"}
CLUSTER = {"namespaces", "nodes", "runtimeclasses", "flowschemas"}
KIND_TO_RES = {"Pod": "pods", "Service": "services", "Endpoints": "endpoints", "Secret": "secrets",
               "ConfigMap": "configmaps", "Namespace": "namespaces", "NetworkPolicy": "networkpolicies",
               "EndpointSlice": "endpointslices", "ServiceAccount": "serviceaccounts", "RuntimeClass": "runtimeclasses",
               "FlowSchema": "flowschemas"}


class Client:
    def __init__(self, server, token, ns):
        u = urllib.parse.urlsplit(server)
        self.host, self.port, self.tls = u.hostname, u.port, u.scheme == "https"
        self.token, self.ns = token, ns

    def path(self, res, name=None, sub=None, ns=None):
        p = "/" + PATHS[res]
        if res not in CLUSTER:
            p += f"/namespaces/{ns or self.ns}"
        p += f"/{res}"
        if name:
            p += f"/{name}"
        if sub:
            p += f"/{sub}"
        return p

    def conn(self, timeout=60):
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=ssl._create_unverified_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def call(self, method, path, body=None, ctype="application/json"):
        c = self.conn()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = ctype
        c.request(method, path, data, headers)
        r = c.getresponse()
        out = r.read()
        c.close()
        return r.status, out


def fail(status, out):
    sys.stderr.write(f"HTTP {status}: {out.decode(errors='replace')}\n")
    sys.exit(1)


def ws_connect(cl, path, protocol):
    raw = socket.create_connection((cl.host, cl.port), timeout=60)
    s = ssl._create_unverified_context().wrap_socket(raw, server_hostname=cl.host) if cl.tls else raw
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {cl.host}:{cl.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {protocol}\r\n"
               f"Authorization: Bearer {cl.token}\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    if status != 101:
        # the error body (Content-Length) follows the headers
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        while len(rest) < length:
            chunk = s.recv(4096)
            if not chunk:
                break
            rest += chunk
        fail(status, rest)
    return s, rest


def ws_send(s, lock, payload, opcode=2):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    data = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    with lock:
        s.sendall(head + mask + data)


def ws_frames(s, buf):
    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = s.recv(65536)
            if not chunk:
                raise EOFError
            buf += chunk
    try:
        while True:
            need(2)
            opcode, n = buf[0] & 0x0F, buf[1] & 0x7F
            off = 2
            if n == 126:
                need(4)
                n, off = struct.unpack(">H", buf[2:4])[0], 4
            elif n == 127:
                need(10)
                n, off = struct.unpack(">Q", buf[2:10])[0], 10
            need(off + n)
            payload, buf = buf[off:off + n], buf[off + n:]
            yield opcode, payload
            if opcode == 8:
                return
    except (EOFError, OSError):
        return


def do_exec(cl, a):
    q = [("stdout", "true"), ("stderr", "true"), ("stdin", "true" if a.i else "false")]
    if a.container:
        q.append(("container", a.container))
    if a.sub == "exec":
        q += [("command", c) for c in a.cmd]
    path = cl.path("pods", a.pod, a.sub) + "?" + urllib.parse.urlencode(q)
    proto = f"{a.protocol}.channel.k8s.io"
    s, rest = ws_connect(cl, path, proto)
    lock = threading.Lock()
    if a.i:
        def feed():
            while True:
                data = sys.stdin.buffer.read1(65536)
                if not data:
                    break
                ws_send(s, lock, b"\x00" + data)
            if a.protocol == "v5":
                ws_send(s, lock, b"\xff\x00")
        threading.Thread(target=feed, daemon=True).start()
    status = None
    for opcode, payload in ws_frames(s, rest):
        if opcode not in (1, 2) or not payload:
            continue
        ch, data = payload[0], payload[1:]
        if ch == 1:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        elif ch == 2:
            sys.stderr.buffer.write(data)
            sys.stderr.buffer.flush()
        elif ch == 3:
            status = json.loads(data)
    if status is None:
        sys.stderr.write("exec: the connection ended without a status\n")
        sys.exit(125)
    if status.get("status") == "Success":
        sys.exit(0)
    if status.get("reason") == "NonZeroExitCode":
        sys.exit(int(status["details"]["causes"][0]["message"]))
    sys.stderr.write("exec: " + json.dumps(status) + "\n")
    sys.exit(126)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("-n", "--namespace", default="default")
    sp = p.add_subparsers(dest="verb", required=True)
    x = sp.add_parser("create")
    x.add_argument("file")
    x = sp.add_parser("get")
    x.add_argument("res")
    x.add_argument("name", nargs="?")
    x.add_argument("-l", "--selector")
    x = sp.add_parser("delete")
    x.add_argument("res")
    x.add_argument("name")
    x.add_argument("--grace", type=int)
    x = sp.add_parser("wait")
    x.add_argument("res")
    x.add_argument("name")
    x.add_argument("--for", dest="cond", required=True)
    x.add_argument("--timeout", type=float, default=60)
    x = sp.add_parser("logs")
    x.add_argument("pod")
    x.add_argument("-c", "--container")
    x.add_argument("--tail", type=int)
    x.add_argument("--limit-bytes", type=int)
    x.add_argument("--follow", action="store_true")
    x.add_argument("--previous", action="store_true")
    x = sp.add_parser("watch")
    x.add_argument("res")
    x.add_argument("--rv", default="")
    x.add_argument("--timeout", type=int, default=5)
    x.add_argument("-l", "--selector")
    for sub in ("exec", "attach"):
        x = sp.add_parser(sub)
        x.add_argument("pod")
        x.add_argument("-c", "--container")
        x.add_argument("-i", action="store_true")
        x.add_argument("--protocol", choices=("v4", "v5"), default="v5")
        x.add_argument("cmd", nargs="*")
        x.set_defaults(sub=sub)
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1:]
    a = p.parse_args(argv)
    if rest:
        a.cmd = rest
    cl = Client(a.server, a.token, a.namespace)
    if a.verb == "create":
        text = sys.stdin.read() if a.file == "-" else open(a.file).read()
        objs = json.loads(text)
        for obj in objs if isinstance(objs, list) else [objs]:
            res = KIND_TO_RES[obj["kind"]]
            status, out = cl.call("POST", cl.path(res, ns=obj.get("metadata", {}).get("namespace")), obj)
            if status not in (200, 201):
                fail(status, out)
            sys.stdout.write(out.decode() + "\n")
    elif a.verb == "get":
        q = "?" + urllib.parse.urlencode({"labelSelector": a.selector}) if a.selector else ""
        status, out = cl.call("GET", cl.path(a.res, a.name) + q)
        if status != 200:
            fail(status, out)
        sys.stdout.write(out.decode() + "\n")
    elif a.verb == "delete":
        body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if a.grace is not None:
            body["gracePeriodSeconds"] = a.grace
        status, out = cl.call("DELETE", cl.path(a.res, a.name), body)
        if status not in (200, 202):
            fail(status, out)
        sys.stdout.write(out.decode() + "\n")
    elif a.verb == "wait":
        kind, _, want = a.cond.partition("=")
        deadline = time.time() + a.timeout
        while time.time() < deadline:
            status, out = cl.call("GET", cl.path(a.res, a.name))
            if status == 200:
                obj = json.loads(out)
                st = obj.get("status", {})
                if kind == "phase" and st.get("phase") == want:
                    sys.stdout.write(out.decode() + "\n")
                    return
                if kind == "condition" and any(c["type"] == want and c["status"] == "True" for c in st.get("conditions") or []):
                    sys.stdout.write(out.decode() + "\n")
                    return
                if kind == "phase" and st.get("phase") in ("Succeeded", "Failed") and want not in ("Succeeded", "Failed"):
                    sys.stderr.write(f"{a.name} ended {st.get('phase')}: {json.dumps(st)}\n")
                    sys.exit(1)
            elif kind == "delete" and status == 404:
                return
            time.sleep(0.2)
        sys.stderr.write(f"timed out waiting for {a.cond}: {out.decode(errors='replace')[:2000]}\n")
        sys.exit(2)
    elif a.verb == "logs":
        q = {}
        for k, v in (("container", a.container), ("tailLines", a.tail), ("limitBytes", a.limit_bytes)):
            if v is not None:
                q[k] = v
        if a.follow:
            q["follow"] = "true"
        if a.previous:
            q["previous"] = "true"
        status, out = cl.call("GET", cl.path("pods", a.pod, "log") + "?" + urllib.parse.urlencode(q))
        if status != 200:
            fail(status, out)
        sys.stdout.buffer.write(out)
    elif a.verb == "watch":
        q = {"watch": "true", "resourceVersion": a.rv, "timeoutSeconds": a.timeout}
        if a.selector:
            q["labelSelector"] = a.selector
        c = cl.conn(a.timeout + 30)
        c.request("GET", cl.path(a.res) + "?" + urllib.parse.urlencode(q), headers={"Authorization": f"Bearer {cl.token}"})
        r = c.getresponse()
        if r.status != 200:
            fail(r.status, r.read())
        for line in r:
            sys.stdout.write(line.decode())
            sys.stdout.flush()
    elif a.verb in ("exec", "attach"):
        do_exec(cl, a)


if __name__ == "__main__":
    main()
