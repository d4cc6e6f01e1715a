"""Scale mode's container runtime: pods are not processes.

Every step takes a configured latency (number, or {"mean", "jitter"}):
sandbox_latency, pull_latency (once per image per node; pulls on a node are
serialized unless max_parallel_pulls says otherwise, as the kubelet's
serializeImagePulls default does), start_latency, kill_latency. Without
them, start_delay (the older setting) is split between scheduling and start.
An image whose name contains "no-such-image" or matches a pattern in
missing_images fails to pull. Containers run run_seconds (null: until
stopped) and exit exit_code; init containers run init_run_seconds. Per-pod
test hooks in annotations: fake.forge.dev/run-seconds, fake.forge.dev/exit-code,
fake.forge.dev/termination-message. exec runs the command as a host process in
a scratch directory (the unit tests control every command); logs are the
configured pod_log text.

A main container whose command is forge-box's supervisor (`.../forge-box
supervise ...`, forge-launch --k8s-box-image) waits, as the real one does,
for forge-launch's setup exec (`tar -x ... -C /`), which is not run: its
archive is read and dropped, and the container then runs run_seconds and
ends with exit_code and the supervisor's status line as its termination
message (no output). Any other `tar ... -C /` exec is refused: the host's
root is not a pod's.
"""
import collections
import fnmatch
import itertools
import os
import re
import subprocess
import threading

from .kubelet import StartFailure, containerd_ref, cri_pull_error
from .loop import latency
from .meta import rfc3339
from .websocket import ExecError, exit_status, internal_error


class SimRuntime:
    def __init__(self, cluster):
        self.cluster = cluster
        self.loop = cluster.loop
        self.images = collections.defaultdict(set)       # node -> images pulled
        self.pulling = collections.defaultdict(int)      # node -> pulls in flight
        self.pull_queue = collections.defaultdict(collections.deque)
        self.ips = itertools.count(1)
        self.processes = set()

    def cfg(self, key, default=None):
        v = self.cluster.config.get(key)
        return default if v is None else v

    def half_start(self):
        return float(self.cfg("start_delay", 0.05)) / 2

    def create_sandbox(self, worker, done):
        n = next(self.ips)
        ip = "10.%d.%d.%d" % (128 + (n >> 16) % 128, (n >> 8) % 256, n % 256 or 1)
        self.loop.call_later(latency(self.cfg("sandbox_latency"), 0.0), lambda: done({"ip": ip}, None))

    def start_container(self, worker, c, done):
        image = c.spec["image"]
        node = worker.node
        policy = c.spec.get("imagePullPolicy", "IfNotPresent")
        start = latency(self.cfg("start_latency"), self.half_start())
        handle = {"container_id": "containerd://%064x" % (hash((worker.uid, c.name, c.instance)) & (2 ** 256 - 1)),
                  "image_id": "sha256:" + "%064x" % (hash(image) & (2 ** 256 - 1))}
        missing = "no-such-image" in image or any(fnmatch.fnmatch(image, p) for p in self.cfg("missing_images", []))
        down = "registry-down" in image or any(fnmatch.fnmatch(image, p) for p in self.cfg("unreachable_images", []))
        if policy != "Always" and image in self.images[node]:
            self.loop.call_later(start, lambda: done(handle, None))
            return
        if policy == "Never":
            self.loop.call_soon(lambda: done(None, StartFailure(
                "neverpull", f'Container image "{image}" is not present with pull policy of Never')))
            return

        def pulled():
            self.pulling[node] -= 1
            self.next_pull(node)
            ref = containerd_ref(image)
            if missing:
                done(None, StartFailure("pull", cri_pull_error(
                    "NotFound", image, f'failed to resolve reference "{ref}": {ref}: not found')))
                return
            if down:
                host = ref.split("/", 1)[0]
                done(None, StartFailure("pull", cri_pull_error(
                    "Unknown", image, f'failed to resolve reference "{ref}": failed to do request: Head '
                                      f'"https://{host}/v2/": dial tcp {host}: connect: connection refused')))
                return
            self.images[node].add(image)
            self.loop.call_later(start, lambda: done(handle, None))

        self.pull_queue[node].append(lambda: self.loop.call_later(latency(self.cfg("pull_latency"), 0.0), pulled))
        self.next_pull(node)

    def next_pull(self, node):
        while self.pull_queue[node] and self.pulling[node] < int(self.cfg("max_parallel_pulls", 1)):
            self.pulling[node] += 1
            self.pull_queue[node].popleft()()

    @staticmethod
    def supervised(c):
        cmd = c.spec.get("command") or []
        return not c.init and len(cmd) > 1 and cmd[0].endswith("/forge-box") and cmd[1] == "supervise"

    def watch_exit(self, worker, c, handle, on_exit, after_setup=False):
        handle["on_exit"] = on_exit
        if self.supervised(c) and not after_setup:
            return  # until the setup exec (exec_process)
        ann = worker.annotations
        if c.init and not c.sidecar:
            seconds = float(ann.get("fake.forge.dev/init-run-seconds", self.cfg("init_run_seconds", 0)))
        elif c.sidecar:
            seconds = None
        else:
            v = ann.get("fake.forge.dev/run-seconds", self.cfg("run_seconds"))
            seconds = None if v is None else latency(float(v) if isinstance(v, str) else v)
        if seconds is None:
            return
        code = int(ann.get("fake.forge.dev/exit-code", self.cfg("exit_code", 0))) if not c.init else 0
        info = {"exitCode": code}
        msg = ann.get("fake.forge.dev/termination-message")
        if self.supervised(c):
            msg = f"forge-supervise: exit={code} timed_out=0 truncated=0 stdout=0 stderr=0\n"
        if msg and not c.init:
            info["message"] = msg
        self.loop.call_later(seconds, lambda: on_exit(info))

    def kill(self, worker, c, handle, grace):
        code = 137 if grace == 0 else 143
        self.loop.call_later(latency(self.cfg("kill_latency"), 0.0),
                             lambda: handle["on_exit"]({"exitCode": code, "reason": "Error", "finishedAt": rfc3339()}))

    def remove_container(self, worker, handle):
        pass

    def remove_pod(self, worker, sandbox, done=None):
        if done:
            self.loop.call_soon(done)

    def probe(self, worker, c, probe, done):
        self.loop.call_soon(lambda: done(True))

    # --- streaming ----------------------------------------------------------------
    def exec_process(self, worker, c, command, stdin, tty):
        if "tar" in command and "-C" in command[:-1] and command[command.index("-C") + 1] == "/":
            if not self.supervised(c) or c.handle is None:
                raise ExecError(internal_error("scale mode: no tar into / (pods are not processes)"))
            # v4 has no stdin EOF: forge sends `sh -c 'head -c N | "$@"' sh tar ...`.
            size = re.search(r"head -c (\d+)", command[2]) if command[:2] == ["sh", "-c"] else None
            return SetupSink(lambda: self.watch_exit(worker, c, c.handle, c.handle["on_exit"], after_setup=True),
                             command, int(size.group(1)) if size else None)
        return HostProcess(command, self.cluster.scratch, stdin, bool(self.cfg("exec_drop", False)), self.processes)

    def attach_process(self, worker, c, stdin, tty):
        raise ExecError(internal_error("scale mode: pods are not processes; nothing to attach to"))

    def logs(self, worker, c, opts):
        text = self.cfg("pod_log", "").encode()
        lines = text.splitlines(keepends=True)
        if opts.get("tailLines") is not None:
            lines = lines[-opts["tailLines"]:] if opts["tailLines"] > 0 else []
        return iter([b"".join(lines)])

    def shutdown(self):
        for p in list(self.processes):
            p.kill()


class SetupSink:
    """forge-launch's setup exec into a supervised pod: its archive is read and
    dropped; when it ends, the supervisor's command starts."""

    def __init__(self, started, argv, size):
        self.started, self.argv, self.size = started, argv, size
        self.got = 0
        self.eof = threading.Event()

    def start(self):
        if self.size == 0:
            self.eof.set()

    def write(self, data):
        self.got += len(data)
        if self.size is not None and self.got >= self.size:
            self.eof.set()

    def close_stdin(self):
        self.eof.set()

    def pump(self, send):
        self.eof.wait(120)  # tar reads its archive to the end

    def finish(self):
        self.started()
        return exit_status(0, self.argv)

    def resize(self, w, h):
        pass

    def client_gone(self):
        pass

    def kill(self):
        pass


class HostProcess:
    def __init__(self, argv, cwd, use_stdin, drop, registry):
        self.argv, self.cwd, self.use_stdin, self.drop, self.registry = argv, cwd, use_stdin, drop, registry
        self.proc = None

    def start(self):
        try:
            self.proc = subprocess.Popen(self.argv, cwd=self.cwd,
                                         stdin=subprocess.PIPE if self.use_stdin else subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            raise ExecError(internal_error(f"failed to exec in container: {e}"))
        self.registry.add(self.proc)

    def write(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, AttributeError, OSError):
            pass

    def close_stdin(self):
        try:
            if self.proc and self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass

    def pump(self, send):
        import threading

        def reader(stream, ch):
            while True:
                data = stream.read1(32768)
                if not data:
                    return
                send(ch, data)
        threads = [threading.Thread(target=reader, args=(self.proc.stdout, 1)),
                   threading.Thread(target=reader, args=(self.proc.stderr, 2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def finish(self):
        code = self.proc.wait()
        self.registry.discard(self.proc)
        return exit_status(code if code >= 0 else 128 - code, self.argv)

    def resize(self, w, h):
        pass

    def client_gone(self):
        pass

    def kill(self):
        if self.proc:
            self.proc.kill()
