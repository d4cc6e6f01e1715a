"""The fake kubelet: one pod worker per pod bound to a node, a state machine
that both runtimes (Docker containers, or simulated ones) drive.

What it does follows the kubelet: init containers one at a time, each to exit
0 before the next (restartPolicy Never: a failed one fails the pod); native
sidecars (init containers with restartPolicy Always) start in order and the
next one waits until the sidecar has started (its startupProbe passed), keep
running beside the containers, and are stopped, in reverse order, once the
containers are done; containers restarted per restartPolicy with the
kubelet's back-off (CrashLoopBackOff); image pulls that fail go ErrImagePull
then ImagePullBackOff and are retried with back-off; exec, httpGet and
tcpSocket probes (startup, readiness, liveness) with their thresholds;
activeDeadlineSeconds from startTime (Failed, DeadlineExceeded); node-pressure
eviction (Failed, Evicted, DisruptionTarget); graceful deletion (containers
stopped, then the object removed). The phase, conditions and container
statuses are computed as the kubelet's generateAPIPodStatus and getPhase do.
"""
import re
import time

from .meta import rfc3339

COMPLETED_REASONS = ("Succeeded", "Failed")


# A reference as the kubelet parses it before pulling (docker/distribution's
# reference grammar, lower-case repository, optional tag and digest).
IMAGE_REFERENCE = re.compile(
    r"^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"|\[[0-9a-fA-F:]+\])(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$")


def invalid_image_name(image):
    """The kubelet's InvalidImageName message for an image it cannot parse
    (pkg/kubelet/images/image_manager.go, applyDefaultImageTag), else None."""
    if IMAGE_REFERENCE.match(image) and len(image.split("@")[0]) <= 255:
        return None
    return (f'Failed to apply default image tag "{image}": couldn\'t parse image reference "{image}": '
            f'invalid reference format')


def containerd_ref(image):
    """The reference containerd's CRI pulls: a name without tag or digest gets :latest."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return image if "@" in image or ":" in last else image + ":latest"


def cri_pull_error(code, image, cause):
    """The waiting message of ErrImagePull: the CRI's gRPC error as the kubelet
    passes it on (err.Error()), in containerd's words
    (internal/cri/server/images/image_pull.go: failed to pull and unpack image;
    client pull: failed to resolve reference)."""
    ref = containerd_ref(image)
    return f'rpc error: code = {code} desc = failed to pull and unpack image "{ref}": {cause}'


class StartFailure(Exception):
    """kind: pull (ErrImagePull), image (InvalidImageName), neverpull
    (ErrImageNeverPull), config (CreateContainerConfigError), create
    (CreateContainerError), start (terminated StartError, exit 128)."""
    expected = True

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind, self.message = kind, message


class CState:
    def __init__(self, spec, init):
        self.spec = spec
        self.name = spec["name"]
        self.init = init
        self.sidecar = init and spec.get("restartPolicy") == "Always"
        self.state = "waiting"
        self.waiting = None            # (reason, message) once known
        self.started_at = None
        self.term = None               # dict for state.terminated
        self.last = None               # lastState.terminated
        self.restart_count = 0
        self.handle = None
        self.prev_handle = None
        self.container_id = ""
        self.image_id = ""
        self.busy = False
        self.backoff_until = 0.0
        self.backoff = 0.0
        self.pull_failures = 0
        self.started = False
        self.ready = False
        self.instance = 0              # bumped per start: stale callbacks are ignored
        self.probe_counts = {}
        self.killing = False

    def status(self, image, default_wait):
        st = {"name": self.name, "image": image, "imageID": self.image_id, "ready": self.ready,
              "restartCount": self.restart_count, "started": self.started}
        if self.container_id:
            st["containerID"] = self.container_id
        if self.state == "running":
            st["state"] = {"running": {"startedAt": self.started_at}}
        elif self.state == "terminated":
            st["state"] = {"terminated": self.term}
        else:
            reason, message = self.waiting or (default_wait, None)
            w = {"reason": reason}
            if message:
                w["message"] = message
            st["state"] = {"waiting": w}
        st["lastState"] = {"terminated": self.last} if self.last else {}
        return st


class PodWorker:
    def __init__(self, kubelet, pod):
        self.k = kubelet
        self.cluster = kubelet.cluster
        meta = pod["metadata"]
        self.ns, self.name, self.uid = meta.get("namespace", ""), meta["name"], meta["uid"]
        self.pod = pod
        self.spec = pod["spec"]
        self.node = self.spec["nodeName"]
        self.inits = [CState(c, True) for c in self.spec.get("initContainers") or []]
        self.mains = [CState(c, False) for c in self.spec.get("containers") or []]
        self.sandbox = None
        self.sandbox_busy = False
        self.sandbox_failures = 0
        self.pod_ip = None
        self.start_time = time.time()
        self.terminal = None           # (reason, message): Failed whatever the containers say
        self.final_phase = None
        self.deleting = None           # grace seconds once deletion was asked for
        self.gone = False              # the object left the store (forced deletion)
        self.removed = False
        self.cleaning = False
        self.disruption = None
        self.prev_conditions = {}
        self.annotations = meta.get("annotations") or {}
        ads = self.spec.get("activeDeadlineSeconds")
        if ads:
            kubelet.loop.call_later(float(ads), self.deadline)

    # --- helpers ----------------------------------------------------------
    def all_containers(self):
        return self.inits + self.mains

    def find(self, name):
        return next((c for c in self.all_containers() if c.name == name), None)

    def policy(self):
        return self.spec.get("restartPolicy", "Always")

    def should_restart(self, c):
        if self.deleting is not None or self.gone or self.terminal or self.final_phase:
            return False
        if c.sidecar:
            return True
        p = self.policy()
        return p == "Always" or (p == "OnFailure" and (c.term or {}).get("exitCode") != 0)

    def grace(self):
        g = self.deleting if self.deleting is not None else self.spec.get("terminationGracePeriodSeconds", 30)
        return max(0, int(g))

    def later(self, delay, fn):
        self.k.loop.call_later(delay, lambda: None if self.removed else fn())

    # --- the sync loop (runs in the fake's loop, under its lock) ------------
    def sync(self):
        if self.removed:
            return
        if self.deleting is not None or self.gone or self.terminal or self.final_phase:
            self.stop_everything()
            self.publish()
            return
        if self.sandbox is None:
            if not self.sandbox_busy:
                self.start_sandbox()
            self.publish()
            return
        for c in self.inits:
            if c.sidecar:
                if c.state == "running" and c.started:
                    continue
                if c.state != "running":
                    self.ensure_running(c)
                self.publish()
                return
            if c.state == "terminated" and c.term["exitCode"] == 0:
                continue
            if c.state == "terminated" and self.policy() == "Never":
                self.final_phase = "Failed"
                self.stop_everything()
                self.publish()
                return
            self.ensure_running(c)
            self.publish()
            return
        for c in self.mains:
            if c.state == "waiting" or (c.state == "terminated" and self.should_restart(c)):
                self.ensure_running(c)
        if self.mains and all(c.state == "terminated" and not self.should_restart(c) for c in self.mains):
            self.final_phase = self.compute_phase()
            self.stop_everything()
        self.publish()

    def start_sandbox(self):
        self.sandbox_busy = True

        def done(sandbox, error):
            self.sandbox_busy = False
            if self.removed:
                if sandbox is not None:
                    self.k.runtime.remove_pod(self, sandbox)
                return
            if error is not None:
                self.sandbox_failures += 1
                self.sandbox_error = str(error)
                self.later(min(30, 2 ** self.sandbox_failures), self.sync)
                return
            self.sandbox = sandbox
            self.pod_ip = sandbox.get("ip")
            self.sync()
        self.k.runtime.create_sandbox(self, done)

    def ensure_running(self, c):
        if c.busy or c.state == "running":
            return
        now = time.monotonic()
        if c.state == "terminated":
            # a restart: keep the last termination, back off first
            c.last, c.term = c.term, None
            c.prev_handle = c.handle
            c.restart_count += 1
            c.state = "waiting"
            c.backoff = min(300.0, c.backoff * 2) if c.backoff else float(self.k.config("restart_backoff", 10))
            c.backoff_until = now + c.backoff
            c.waiting = ("CrashLoopBackOff", f"back-off {int(c.backoff)}s restarting failed "
                                             f"container={c.name} pod={self.name}_{self.ns}({self.uid})")
        if now < c.backoff_until:
            self.later(c.backoff_until - now + 0.001, self.sync)
            return
        c.busy = True
        c.instance += 1
        instance = c.instance
        invalid = invalid_image_name(c.spec.get("image") or "")

        def done(result, error):
            if c.instance != instance:
                return
            c.busy = False
            if self.removed:
                if result is not None:
                    self.k.runtime.remove_container(self, result)
                return
            if error is None:
                self.on_started(c, result)
            elif isinstance(error, StartFailure):
                self.on_start_failure(c, error)
            else:
                self.on_start_failure(c, StartFailure("create", str(error)))
            self.sync()
        if invalid:
            done(None, StartFailure("image", invalid))
            return
        self.k.runtime.start_container(self, c, done)

    def on_started(self, c, handle):
        c.handle = handle
        c.container_id = handle.get("container_id", "")
        c.image_id = handle.get("image_id", c.image_id)
        c.state = "running"
        c.waiting = None
        c.started_at = rfc3339()
        c.pull_failures = 0
        c.probe_counts = {}
        c.started = "startupProbe" not in c.spec
        c.ready = c.started and "readinessProbe" not in c.spec
        if self.deleting is not None or self.gone or self.terminal or self.final_phase:
            self.kill(c)
            return
        instance = c.instance
        self.k.runtime.watch_exit(self, c, handle, lambda info: self.on_exit(c, instance, info))
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            if kind in c.spec and (kind == "startupProbe" or c.started):
                self.schedule_probe(c, kind, c.spec[kind].get("initialDelaySeconds", 0))

    def on_start_failure(self, c, failure):
        now = time.monotonic()
        if failure.kind == "pull":
            c.pull_failures += 1
            c.backoff = min(300.0, float(self.k.config("image_pull_backoff", 10)) * 2 ** (c.pull_failures - 1))
            c.backoff_until = now + c.backoff
            c.waiting = ("ErrImagePull", failure.message)
            hold = min(c.backoff / 2, float(self.k.config("pull_error_hold", 1.0)))
            instance = c.instance

            def to_backoff():
                if c.instance == instance and c.state == "waiting" and c.waiting and c.waiting[0] == "ErrImagePull":
                    # As kubelets since 1.31 say it: the back-off, then the pull's error.
                    c.waiting = ("ImagePullBackOff", f'Back-off pulling image "{c.spec["image"]}": '
                                                     f'ErrImagePull: {failure.message}')
                    self.publish()
            self.later(hold, to_backoff)
        elif failure.kind == "start":
            c.state = "terminated"
            c.term = {"exitCode": 128, "reason": "StartError", "message": failure.message,
                      "startedAt": "1970-01-01T00:00:00Z", "finishedAt": rfc3339(),
                      "containerID": c.container_id} if c.container_id else \
                {"exitCode": 128, "reason": "StartError", "message": failure.message,
                 "startedAt": "1970-01-01T00:00:00Z", "finishedAt": rfc3339()}
        else:
            reason = {"config": "CreateContainerConfigError", "image": "InvalidImageName",
                      "neverpull": "ErrImageNeverPull"}.get(failure.kind, "CreateContainerError")
            c.waiting = (reason, failure.message)
            c.backoff = min(300.0, (c.backoff * 2) if c.backoff else float(self.k.config("restart_backoff", 10)))
            c.backoff_until = now + c.backoff

    def on_exit(self, c, instance, info):
        """info: exitCode, reason (optional), message, finishedAt."""
        if c.instance != instance or c.state != "running":
            return
        c.state = "terminated"
        code = int(info.get("exitCode", 0))
        reason = info.get("reason") or ("Completed" if code == 0 else "Error")
        c.term = {"exitCode": code, "reason": reason, "startedAt": c.started_at,
                  "finishedAt": info.get("finishedAt") or rfc3339(), "containerID": c.container_id}
        if info.get("signal"):
            c.term["signal"] = info["signal"]
        if info.get("message"):
            c.term["message"] = info["message"]
        c.started = False
        c.ready = False
        c.killing = False
        self.sync()

    # --- probes ---------------------------------------------------------------
    def schedule_probe(self, c, kind, delay):
        instance = c.instance

        def run():
            if c.instance != instance or c.state != "running" or self.deleting is not None or self.terminal:
                return
            probe = c.spec[kind]

            def done(ok):
                if c.instance != instance or c.state != "running":
                    return
                self.on_probe(c, kind, ok)
                if c.instance == instance and c.state == "running" and not (kind == "startupProbe" and c.started):
                    self.schedule_probe(c, kind, probe.get("periodSeconds", 10))
            self.k.runtime.probe(self, c, probe, done)
        self.later(float(delay), run)

    def on_probe(self, c, kind, ok):
        probe = c.spec[kind]
        counts = c.probe_counts.setdefault(kind, [0, 0])  # successes, failures in a row
        if ok:
            counts[0], counts[1] = counts[0] + 1, 0
        else:
            counts[0], counts[1] = 0, counts[1] + 1
        if kind == "startupProbe":
            if ok:
                c.started = True
                c.ready = "readinessProbe" not in c.spec
                for k in ("readinessProbe", "livenessProbe"):
                    if k in c.spec:
                        self.schedule_probe(c, k, c.spec[k].get("initialDelaySeconds", 0))
            elif counts[1] >= probe.get("failureThreshold", 3):
                self.kill(c)
        elif kind == "readinessProbe":
            if ok and counts[0] >= probe.get("successThreshold", 1):
                c.ready = True
            elif not ok and counts[1] >= probe.get("failureThreshold", 3):
                c.ready = False
        elif kind == "livenessProbe" and not ok and counts[1] >= probe.get("failureThreshold", 3):
            self.kill(c)
        self.sync()

    # --- stopping ----------------------------------------------------------------
    def kill(self, c, grace=None):
        if c.state != "running" or c.killing:
            return
        c.killing = True
        self.k.runtime.kill(self, c, c.handle, self.grace() if grace is None else grace)

    def stop_everything(self):
        """Containers first (sidecars last, in reverse order), then, when the pod
        is being deleted, the sandbox and the object."""
        running_mains = [c for c in self.mains if c.state == "running"]
        if self.terminal or self.deleting is not None or self.gone:
            for c in running_mains:
                self.kill(c, 0 if self.terminal and self.terminal[0] == "Evicted" else None)
        sidecars_wait = any(c.state == "running" or c.busy for c in self.mains)
        for c in reversed(self.inits):
            if c.state == "running" and (not c.sidecar or not sidecars_wait):
                self.kill(c, 0 if self.terminal and self.terminal[0] == "Evicted" else None)
                sidecars_wait = True  # one at a time, in reverse order
        if self.deleting is None and not self.gone:
            return
        if any(c.state == "running" or c.busy for c in self.all_containers()) or self.sandbox_busy:
            return
        if not self.cleaning:
            self.cleaning = True
            self.k.runtime.remove_pod(self, self.sandbox, done=self.finish_removal)

    def finish_removal(self):
        self.removed = True
        self.k.forget(self)
        if not self.gone:
            with self.cluster.lock:
                self.cluster.finalize_pod_deletion(self.ns, self.name, self.uid)

    def deadline(self):
        if self.removed or self.final_phase or self.terminal:
            return
        self.terminal = ("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
        self.sync()

    def evict(self, message):
        if self.removed or self.final_phase:
            return False
        self.terminal = ("Evicted", message)
        self.disruption = {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                           "message": message, "lastTransitionTime": rfc3339()}
        self.sync()
        return True

    def begin_deletion(self, grace):
        self.deleting = grace if self.deleting is None else min(self.deleting, grace)
        self.sync()

    def object_gone(self):
        self.gone = True
        self.deleting = 0 if self.deleting is None else self.deleting
        self.sync()

    # --- status --------------------------------------------------------------------
    def compute_phase(self):
        if self.terminal:
            return "Failed"
        if self.final_phase:
            return self.final_phase
        policy = self.policy()
        for c in self.inits:
            if not c.sidecar and c.state == "terminated" and c.term["exitCode"] != 0 and policy == "Never":
                return "Failed"
        if any((not c.sidecar and not (c.state == "terminated" and c.term["exitCode"] == 0))
               or (c.sidecar and not c.started and not self.initialized_once) for c in self.inits):
            return "Pending"
        running = waiting = stopped = succeeded = 0
        for c in self.mains:
            if c.state == "running":
                running += 1
            elif c.state == "terminated":
                stopped += 1
                succeeded += c.term["exitCode"] == 0
            elif c.last is not None:
                stopped += 1
                succeeded += c.last["exitCode"] == 0
            else:
                waiting += 1
        if waiting:
            return "Pending"
        if running:
            return "Running"
        if stopped:
            if (self.deleting is not None or self.gone) and not running:
                return "Succeeded" if stopped == succeeded else "Failed"
            if policy == "Always":
                return "Running"
            if stopped == succeeded:
                return "Succeeded"
            return "Failed" if policy == "Never" else "Running"
        return "Pending"

    @property
    def initialized_once(self):
        return getattr(self, "_initialized", False)

    def condition(self, type_, ok, reason=None, message=None):
        key = (ok, reason, message)
        prev = self.prev_conditions.get(type_)
        when = prev[1] if prev and prev[0][0] == ok else rfc3339()
        self.prev_conditions[type_] = (key, when)
        c = {"type": type_, "status": "True" if ok else "False", "lastProbeTime": None, "lastTransitionTime": when}
        if reason:
            c["reason"] = reason
        if message:
            c["message"] = message
        return c

    def build_status(self, old):
        phase = self.compute_phase()
        if phase in COMPLETED_REASONS:
            self.final_phase = self.final_phase or (phase if (self.terminal or all(
                c.state == "terminated" for c in self.mains)) else None)
        has_init = bool(self.inits)
        default_wait = "PodInitializing" if has_init else "ContainerCreating"
        incomplete = [c.name for c in self.inits if (not c.sidecar and not (c.state == "terminated" and c.term["exitCode"] == 0))
                      or (c.sidecar and not c.started)]
        if not incomplete:
            self._initialized = True
        initialized = not incomplete or self.initialized_once
        unready = [c.name for c in self.inits if c.sidecar and not c.ready] + [c.name for c in self.mains if not c.ready]
        conds = [self.condition("PodReadyToStartContainers", self.sandbox is not None)]
        conds.append(self.condition("Initialized", initialized, None if initialized else "ContainersNotInitialized",
                                    None if initialized else f"containers with incomplete status: [{' '.join(incomplete)}]"))
        if phase in COMPLETED_REASONS:
            ready_c = [self.condition("Ready", False, "PodCompleted"), self.condition("ContainersReady", False, "PodCompleted")]
        else:
            msg = f"containers with unready status: [{' '.join(unready)}]" if unready else None
            ready_c = [self.condition("Ready", not unready, "ContainersNotReady" if unready else None, msg),
                       self.condition("ContainersReady", not unready, "ContainersNotReady" if unready else None, msg)]
        conds += ready_c
        scheduled = next((c for c in old.get("conditions") or [] if c["type"] == "PodScheduled"), None)
        if scheduled:
            conds.append(scheduled)
        for c in old.get("conditions") or []:
            if c["type"] == "DisruptionTarget" and not self.disruption:
                conds.append(c)
        if self.disruption:
            conds.append(self.disruption)
        status = {"phase": phase, "conditions": conds, "hostIP": self.k.node_ip(self.node),
                  "hostIPs": [{"ip": self.k.node_ip(self.node)}], "startTime": rfc3339(self.start_time),
                  "qosClass": old.get("qosClass", "BestEffort")}
        if self.pod_ip:
            status["podIP"] = self.pod_ip
            status["podIPs"] = [{"ip": self.pod_ip}]
        if self.inits:
            status["initContainerStatuses"] = [c.status(c.spec["image"], default_wait) for c in self.inits]
        status["containerStatuses"] = [c.status(c.spec["image"], default_wait) for c in self.mains]
        if self.terminal:
            status["reason"], status["message"] = self.terminal
        return status

    def publish(self):
        if self.removed or self.gone:
            return
        store = self.cluster.store

        def fn(pod):
            if pod["metadata"].get("uid") != self.uid:
                return False
            new = self.build_status(pod.get("status") or {})
            old = pod.get("status") or {}
            if _strip_times(new) == _strip_times(old):
                return False
            pod["status"] = new
        store.update("pods", self.ns, self.name, fn)


def _strip_times(status):
    """A status without its transition times, to tell a real change from a rewrite."""
    out = dict(status)
    out["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions") or []]
    return out


class Kubelet:
    """All the fake's nodes' kubelets: workers by pod uid, one runtime."""

    def __init__(self, cluster, runtime):
        self.cluster = cluster
        self.loop = cluster.loop
        self.runtime = runtime
        self.workers = {}

    def config(self, key, default):
        v = self.cluster.config.get(key)
        return default if v is None else v

    def node_ip(self, node):
        return self.cluster.node_ip(node)

    def forget(self, worker):
        self.workers.pop(worker.uid, None)

    def on_pod_event(self, event):
        """Store subscriber (under the lock): new bound pods, deletions."""
        pod = event.obj
        uid = pod["metadata"].get("uid")
        worker = self.workers.get(uid)
        if event.type == "DELETED":
            if worker is not None:
                self.loop.call_soon(worker.object_gone)
            return
        if worker is None:
            node = pod["spec"].get("nodeName")
            if not node or not self.cluster.is_kubelet_node(node) or pod["status"].get("phase") in COMPLETED_REASONS:
                return
            if (pod["metadata"].get("annotations") or {}).get("fake.forge.dev/static") == "true":
                return
            worker = self.workers[uid] = PodWorker(self, pod)
            self.loop.call_soon(worker.sync)
            return
        ts = pod["metadata"].get("deletionTimestamp")
        if ts is not None and (worker.deleting is None or pod["metadata"].get("deletionGracePeriodSeconds", 0) < worker.deleting):
            grace = pod["metadata"].get("deletionGracePeriodSeconds", 0)
            self.loop.call_soon(lambda: worker.begin_deletion(grace))
