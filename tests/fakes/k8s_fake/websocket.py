"""RFC 6455 framing and the Kubernetes remote-command channel protocol
(v4.channel.k8s.io, v5.channel.k8s.io; KEP-4006) for exec and attach.

A session pumps a process's output to channels 1 and 2, the client's channel
0 to its stdin (v5's [255, 0] closes it), channel 4 to a resize, and ends with
the metav1.Status on channel 3: Success, NonZeroExitCode with the exit code as
a cause, or the error that kept the command from running.
"""
import base64
import hashlib
import json
import struct
import threading

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def accept_key(key):
    return base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()


def exit_status(code, command):
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"{command}, exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def internal_error(message):
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError",
            "details": {"causes": [{"message": message}]}, "code": 500}


class ExecError(Exception):
    """A command that could not run: its Status goes on channel 3."""

    def __init__(self, status):
        super().__init__(status.get("message"))
        self.status = status


class Session:
    """proc: start(), write(bytes), close_stdin(), pump(send) (output until EOF),
    resize(w, h), finish() -> Status dict, and .drop (end without a status)."""

    def __init__(self, handler, protocol, proc, use_stdin, first_channel=None):
        self.h = handler
        self.protocol = protocol
        self.proc = proc
        self.use_stdin = use_stdin
        self.first_channel = first_channel
        self.write_lock = threading.Lock()
        self.client_done = threading.Event()
        self.command = []         # an exec's argv, for drop()
        self.dropped = False      # drop(): the connection ended mid-stream
        self.keep_stdin = False   # ... and the process's stdin left open

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
            except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
                pass

    def channel(self, ch, data):
        self.send(2, bytes([ch]) + data)

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

    def close(self):
        self.send(8, struct.pack(">H", 1000))

    def drop(self, keep_stdin):
        """The connection ends mid-stream without a status (an API server or
        kubelet gone, a proxy's idle cut); with keep_stdin the process's stdin
        stays open, as under a runtime that does not end it when the stream
        does (kubernetes/kubernetes#89031): only the process's own watch, or a
        stop, ends it."""
        self.keep_stdin = keep_stdin
        self.dropped = True
        try:
            self.h.connection.shutdown(2)
        except OSError:
            pass

    def run(self):
        try:
            self.proc.start()
        except ExecError as e:
            self.channel(3, json.dumps(e.status).encode())
            self.close()
            return
        # An empty message on the lowest stream asked for says "ready".
        self.channel(self.first_channel if self.first_channel is not None else (0 if self.use_stdin else 1), b"")
        threading.Thread(target=self.from_client, daemon=True).start()
        sessions = self.h.cluster.exec_sessions
        with self.h.cluster.lock:
            sessions.add(self)
        try:
            self.proc.pump(self.channel)
            status = self.proc.finish()
        finally:
            with self.h.cluster.lock:
                sessions.discard(self)
        if self.dropped:
            return
        if getattr(self.proc, "drop", False):
            try:
                self.h.connection.shutdown(2)
            except OSError:
                pass
            return
        self.channel(3, json.dumps(status).encode())
        self.close()
        self.client_done.wait(2)

    def from_client(self):
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
                ch = data[0]
                if ch == 0 and self.use_stdin:
                    self.proc.write(data[1:])
                elif ch == 4:
                    try:
                        size = json.loads(data[1:])
                        self.proc.resize(int(size.get("Width", 0)), int(size.get("Height", 0)))
                    except (ValueError, AttributeError):
                        pass
                elif ch == 255 and self.protocol == "v5.channel.k8s.io" and data[1:2] == b"\x00":
                    self.proc.close_stdin()
        except (ValueError, OSError, struct.error):
            pass
        finally:
            self.client_done.set()
            if not (self.dropped and self.keep_stdin):
                self.proc.close_stdin()
                self.proc.client_gone()
