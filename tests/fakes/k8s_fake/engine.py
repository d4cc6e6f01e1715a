"""A small Docker Engine API client over the unix socket (standard library
only): JSON calls, image pulls with X-Registry-Auth, container lifecycle,
demultiplexed log streams, and hijacked exec/attach streams."""
import base64
import http.client
import json
import socket
import struct
import urllib.parse

API = "/v1.41"


class EngineError(Exception):
    expected = True

    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("docker", timeout=timeout)
        self.path_ = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path_)
        self.sock = s


def demux(read):
    """Yields (stream, bytes) from a multiplexed stdout/stderr stream; read(n) -> bytes."""
    while True:
        head = _read_exact(read, 8)
        if len(head) < 8:
            return
        stream, size = head[0], struct.unpack(">I", head[4:])[0]
        data = _read_exact(read, size)
        if data:
            yield stream, data
        if len(data) < size:
            return


def _read_exact(read, n):
    out = b""
    while len(out) < n:
        chunk = read(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


class Hijacked:
    """A raw stream after an Upgrade: tcp answer; leftover bytes come first."""

    def __init__(self, sock, leftover):
        self.sock, self.buf = sock, leftover

    def read(self, n):
        if self.buf:
            out, self.buf = self.buf[:n], self.buf[n:]
            return out
        try:
            return self.sock.recv(n)
        except OSError:
            return b""

    def write(self, data):
        try:
            self.sock.sendall(data)
        except OSError:
            pass

    def close_write(self):
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Engine:
    def __init__(self, socket_path="/var/run/docker.sock"):
        self.socket_path = socket_path

    def request(self, method, path, body=None, headers=None, timeout=120, stream=False):
        conn = _UnixConnection(self.socket_path, timeout)
        data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
        hdrs = {"Content-Type": "application/json"} if data is not None else {}
        hdrs.update(headers or {})
        try:
            conn.request(method, API + path, body=data, headers=hdrs)
            resp = conn.getresponse()
        except OSError as e:
            conn.close()
            raise EngineError(0, f"Docker engine at {self.socket_path}: {e}")
        if stream:
            return resp, conn
        out = resp.read()
        conn.close()
        return resp.status, out

    def call(self, method, path, body=None, ok=(200, 201, 204, 304), timeout=120):
        status, out = self.request(method, path, body, timeout=timeout)
        if status not in ok:
            try:
                message = json.loads(out).get("message", out.decode(errors="replace"))
            except ValueError:
                message = out.decode(errors="replace")
            raise EngineError(status, message.strip())
        if not out:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return out

    def ping(self):
        status, out = self.request("GET", "/_ping", timeout=10)
        if status != 200:
            raise EngineError(status, "the Docker engine did not answer /_ping")

    # --- images --------------------------------------------------------------
    def inspect_image(self, ref):
        try:
            return self.call("GET", f"/images/{urllib.parse.quote(ref, safe='')}/json")
        except EngineError as e:
            if e.status == 404:
                return None
            raise

    def pull(self, ref, auth=None, timeout=600):
        headers = {}
        if auth:
            headers["X-Registry-Auth"] = base64.urlsafe_b64encode(json.dumps(auth).encode()).decode()
        resp, conn = self.request("POST", "/images/create?fromImage=" + urllib.parse.quote(ref, safe=""),
                                  b"", headers=headers, timeout=timeout, stream=True)
        try:
            body = resp.read()
        finally:
            conn.close()
        if resp.status != 200:
            try:
                message = json.loads(body).get("message", "")
            except ValueError:
                message = body.decode(errors="replace")
            raise EngineError(resp.status, message.strip())
        for line in body.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("error"):
                raise EngineError(500, event["error"].strip())

    # --- containers ---------------------------------------------------------------
    def create(self, name, config):
        return self.call("POST", "/containers/create?name=" + urllib.parse.quote(name), config)["Id"]

    def start(self, cid):
        self.call("POST", f"/containers/{cid}/start")

    def inspect(self, cid):
        return self.call("GET", f"/containers/{cid}/json")

    def stop(self, cid, grace):
        self.call("POST", f"/containers/{cid}/stop?t={int(grace)}", ok=(204, 304, 404), timeout=int(grace) + 60)

    def kill(self, cid, signal="KILL"):
        self.call("POST", f"/containers/{cid}/kill?signal={signal}", ok=(204, 404, 409))

    def remove(self, cid):
        self.call("DELETE", f"/containers/{cid}?force=true&v=true", ok=(204, 404, 409))

    def wait(self, cid):
        """Blocks until the container stops; its StatusCode."""
        out = self.call("POST", f"/containers/{cid}/wait", timeout=None)
        return (out or {}).get("StatusCode")

    def containers(self, label):
        filters = urllib.parse.quote(json.dumps({"label": [label]}))
        return self.call("GET", f"/containers/json?all=true&filters={filters}") or []

    def logs(self, cid, tail=None, follow=False, since=None, timestamps=False):
        q = {"stdout": "1", "stderr": "1", "follow": "1" if follow else "0",
             "timestamps": "1" if timestamps else "0", "tail": "all" if tail is None else str(tail)}
        if since:
            q["since"] = str(int(since))
        resp, conn = self.request("GET", f"/containers/{cid}/logs?" + urllib.parse.urlencode(q),
                                  timeout=None if follow else 60, stream=True)
        if resp.status != 200:
            conn.close()
            raise EngineError(resp.status, resp.read().decode(errors="replace"))
        return resp, conn

    # --- exec and attach -------------------------------------------------------------
    def exec_create(self, cid, cmd, stdin, tty, user=None, env=None, workdir=None):
        body = {"Cmd": cmd, "AttachStdin": stdin, "AttachStdout": True, "AttachStderr": True, "Tty": tty}
        if user:
            body["User"] = user
        if env:
            body["Env"] = env
        if workdir:
            body["WorkingDir"] = workdir
        return self.call("POST", f"/containers/{cid}/exec", body)["Id"]

    def exec_inspect(self, eid):
        return self.call("GET", f"/exec/{eid}/json")

    def exec_resize(self, eid, w, h):
        self.call("POST", f"/exec/{eid}/resize?h={h}&w={w}", ok=(200, 201, 404, 409))

    def hijack(self, path, body):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.socket_path)
        data = json.dumps(body).encode() if body is not None else b""
        s.sendall((f"POST {API}{path} HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n"
                   f"Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                s.close()
                raise EngineError(0, "the engine closed the stream before answering")
            buf += chunk
        head, rest = buf.split(b"\r\n\r\n", 1)
        code = int(head.split(b" ", 2)[1])
        if code not in (101, 200):
            s.close()
            try:
                message = json.loads(rest).get("message", "")
            except ValueError:
                message = rest.decode(errors="replace")
            raise EngineError(code, message)
        return Hijacked(s, rest)

    def exec_start(self, eid, tty):
        return self.hijack(f"/exec/{eid}/start", {"Detach": False, "Tty": tty})

    def attach(self, cid, stdin):
        q = f"stream=1&stdout=1&stderr=1&stdin={1 if stdin else 0}"
        return self.hijack(f"/containers/{cid}/attach?{q}", None)
