"""Real mode's container runtime: Docker containers on this machine's engine.

A pod is a holder container (the pause image's role: it owns the network,
IPC and UTS namespaces; --network none, then a veth from the node network)
and one container per init container and container, each joining the
holder's network and IPC namespaces (and PID namespace with
shareProcessNamespace). What the kubelet does, done here the same way:
  - images: imagePullPolicy (Always / IfNotPresent / Never), credentials from
    the pod's imagePullSecrets (kubernetes.io/dockerconfigjson or dockercfg
    Secrets, plus the ServiceAccount's), by tag or by digest; only registries
    on 127.0.0.1/localhost are pulled from (this machine's network rule): any
    other is ErrImagePull. A local-only image works with IfNotPresent. The
    node is not the machine that built: an image named with a registry host
    is present on the node only once the node pulled it (the engine's copy
    that a build or a push left does not count), so a pod of a private
    registry's image pulls with its imagePullSecrets' credentials, and
    without them meets the registry's 401 as ErrImagePull.
  - command/args against the image's ENTRYPOINT/CMD: command replaces
    ENTRYPOINT (and drops CMD), args replace CMD; $(VAR) expanded from the
    container's env ($$ escapes), env from envFrom, env, valueFrom (fieldRef,
    resourceFieldRef, secretKeyRef, configMapKeyRef), service links
    (enableServiceLinks) and KUBERNETES_SERVICE_*; workingDir.
  - securityContext (pod and container): runAsUser/runAsGroup,
    supplementalGroups, fsGroup (group of emptyDir volumes), runAsNonRoot
    (checked against the image's USER as the kubelet does:
    CreateContainerConfigError), capabilities add/drop,
    allowPrivilegeEscalation=false (no_new_privs), privileged,
    readOnlyRootFilesystem, seccompProfile Unconfined.
  - resources.limits cpu/memory as CFS quota and memory (+swap) limits,
    requests.cpu as shares.
  - volumes: emptyDir (0777 host directory, or tmpfs for medium Memory with
    sizeLimit), configMap and secret (files, items, defaultMode), hostPath;
    volumeMounts with readOnly and subPath.
  - /etc/hosts written as the kubelet writes it (with hostAliases) and
    /etc/resolv.conf pointing at kube-dns (dnsPolicy ClusterFirst; search
    <ns>.svc.cluster.local svc.cluster.local cluster.local; ndots:5).
  - terminationMessagePath: a host file bind-mounted there, read when the
    container stops (4096 bytes at most); FallbackToLogsOnError: the last 80
    lines / 2048 bytes of the log when the file is empty and the exit code
    is not 0.
  - probes: exec through the engine, httpGet and tcpSocket from the node to
    the pod's IP.
"""
import base64
import collections
import json
import math
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import http.client

from .engine import EngineError, demux
from .kubelet import StartFailure, containerd_ref, cri_pull_error
from .meta import quantity, rfc3339
from .websocket import ExecError, exit_status, internal_error

LOCAL_REGISTRY = re.compile(r"^(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$")
FINISH_LOCK = threading.Lock()


def containerd_pull_failure(image, reg, error):
    """The node's engine's pull error (the Docker engine's words) as a
    kubelet over containerd reports it (kubelet.cri_pull_error): a 404 (no
    such tag, digest or repository) is containerd's resolver finding every
    host answering 404, "REF: not found" with gRPC NotFound; a registry that
    does not answer or answers 5xx is the first non-404 error, code Unknown."""
    ref = containerd_ref(image)
    path, _, obj = ref[len(reg) + 1:].partition("@")
    if not obj:
        path, _, obj = path.rpartition(":")
    manifest = f"http://{reg}/v2/{path}/manifests/{obj}"
    resolve = f'failed to resolve reference "{ref}"'
    message = error.message
    if error.status == 404 or "manifest unknown" in message or "not found" in message:
        return cri_pull_error("NotFound", image, f"{resolve}: {ref}: not found")
    if "dial tcp" in message:
        return cri_pull_error("Unknown", image, f'{resolve}: failed to do request: Head "{manifest}": '
                                                f'{message[message.index("dial tcp"):]}')
    status = re.search(r"unexpected HTTP status: (\d{3}.*)$", message)
    if status:
        return cri_pull_error("Unknown", image, f"{resolve}: unexpected status from HEAD request to {manifest}: "
                                                f"{status.group(1)}")
    return cri_pull_error("Unknown", image, f"{resolve}: {message}")


def registry_of(image):
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        return first
    return "docker.io"


def expand(text, env):
    """Kubernetes' $(VAR) expansion: unresolved references stay, $$ is $."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i):
            end = text.find(")", i + 2)
            if end < 0:
                out.append(text[i:])
                break
            name = text[i + 2:end]
            out.append(env[name] if name in env else text[i:end + 1])
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


class DockerRuntime:
    def __init__(self, cluster, engine, network, pause_image, scratch):
        self.cluster = cluster
        self.loop = cluster.loop
        self.engine = engine
        self.net = network
        self.pause = pause_image
        self.root = os.path.join(scratch, "pods")
        os.makedirs(self.root, exist_ok=True)
        self.instance = f"{os.getpid()}-{network.k}"
        self.pull_locks = collections.defaultdict(threading.Lock)
        self.node_images = set()  # registry images this node pulled
        if engine.inspect_image(pause_image) is None:
            raise EngineError(404, f"the pause image {pause_image} is not on the engine "
                                   "(scripts/make-busybox-image.sh makes forge-busybox:latest)")

    def labels(self, worker, role):
        return {"forge.k8s-fake": self.instance, "forge.k8s-fake.pid": str(os.getpid()),
                "io.kubernetes.pod.name": worker.name, "io.kubernetes.pod.namespace": worker.ns,
                "io.kubernetes.pod.uid": worker.uid, "io.kubernetes.container.name": role}

    def cname(self, worker, role, n=0):
        return f"k8s_{role}_{worker.name}_{worker.ns}_{worker.uid[:8]}_{n}_fk{self.net.k}"

    # --- sandbox ---------------------------------------------------------------
    def create_sandbox(self, worker, done):
        spec, ns, name = worker.spec, worker.ns, worker.name
        with self.cluster.lock:
            volumes = self.volume_sources(worker)

        def work():
            pdir = os.path.join(self.root, worker.uid)
            os.makedirs(os.path.join(pdir, "volumes"), exist_ok=True)
            self.make_volumes(worker, pdir, volumes)
            host_net = bool(spec.get("hostNetwork"))
            holder_cfg = {
                "Image": self.pause, "Hostname": (spec.get("hostname") or name)[:63],
                "Cmd": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 3600 & wait $!; done"],
                "Labels": self.labels(worker, "POD"),
                "HostConfig": {"NetworkMode": "host" if host_net else "none", "IpcMode": "shareable",
                               "CapDrop": ["ALL"]}}
            if host_net:
                holder_cfg.pop("Hostname")
            hid = self.engine.create(self.cname(worker, "POD"), holder_cfg)
            sandbox = {"holder": hid, "dir": pdir, "containers": []}
            try:
                self.engine.start(hid)
                pid = self.engine.inspect(hid)["State"]["Pid"]
                sandbox["pid"] = pid
                ip = self.net.node_ip if host_net else self.net.attach(worker.uid, pid)
                sandbox["ip"] = ip
                self.write_etc(worker, pdir, ip, host_net)
            except Exception:
                self.engine.remove(hid)
                self.net.detach(worker.uid)
                raise
            return sandbox
        self.loop.run_blocking(work, done)

    def volume_sources(self, worker):
        """configMap and secret contents, read under the lock; raises nothing:
        a missing source is reported when the volumes are made."""
        out = {}
        for v in worker.spec.get("volumes") or []:
            for kind, res in (("configMap", "configmaps"), ("secret", "secrets")):
                if kind in v:
                    src = v[kind]
                    ref = src.get("name") if kind == "configMap" else src.get("secretName")
                    obj = self.cluster.store.get(res, worker.ns, ref)
                    out[v["name"]] = (kind, ref, obj)
        return out

    def make_volumes(self, worker, pdir, sources):
        fs_group = (worker.spec.get("securityContext") or {}).get("fsGroup")
        for v in worker.spec.get("volumes") or []:
            path = os.path.join(pdir, "volumes", v["name"])
            if "emptyDir" in v:
                os.makedirs(path, exist_ok=True)
                ed = v["emptyDir"] or {}
                if ed.get("medium") == "Memory":
                    size = ed.get("sizeLimit")
                    opts = f"size={int(quantity(size))}" if size else "size=64m"
                    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path], check=True)
                os.chmod(path, 0o777)
                if fs_group is not None:
                    os.chown(path, -1, int(fs_group))
                    os.chmod(path, 0o2777)
            elif v["name"] in sources:
                kind, ref, obj = sources[v["name"]]
                src = v[kind]
                if obj is None:
                    if src.get("optional"):
                        os.makedirs(path, exist_ok=True)
                        continue
                    raise OSError(f'MountVolume.SetUp failed for volume "{v["name"]}" : '
                                  f'{"configmap" if kind == "configMap" else "secret"} "{ref}" not found')
                data = dict((obj.get("data") or {}))
                if kind == "secret":
                    data = {k: base64.b64decode(x) for k, x in data.items()}
                else:
                    data = {k: x.encode() for k, x in data.items()}
                    data.update({k: base64.b64decode(x) for k, x in (obj.get("binaryData") or {}).items()})
                items = src.get("items")
                files = [(i["key"], i["path"], i.get("mode")) for i in items] if items else [(k, k, None) for k in data]
                os.makedirs(path, exist_ok=True)
                for key, rel, mode in files:
                    if key not in data:
                        raise OSError(f'MountVolume.SetUp failed for volume "{v["name"]}" : configmap references non-existent config key: {key}')
                    target = os.path.join(path, rel)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, "wb") as f:
                        f.write(data[key])
                    os.chmod(target, mode if mode is not None else src.get("defaultMode", 0o644))
                    if fs_group is not None:
                        os.chown(target, -1, int(fs_group))
            elif "hostPath" in v:
                hp = v["hostPath"]
                if hp.get("type") in ("DirectoryOrCreate",) and not os.path.exists(hp["path"]):
                    os.makedirs(hp["path"], 0o755)

    def write_etc(self, worker, pdir, ip, host_net):
        spec = worker.spec
        hostname = (spec.get("hostname") or worker.name)[:63]
        lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
                 "fe00::0\tip6-localnet", "fe00::0\tip6-mcastprefix", "fe00::1\tip6-allnodes", "fe00::2\tip6-allrouters"]
        fqdn = f"{hostname}.{spec['subdomain']}.{worker.ns}.svc.cluster.local\t" if spec.get("subdomain") else ""
        lines.append(f"{ip}\t{fqdn}{hostname}")
        if spec.get("hostAliases"):
            lines += ["", "# Entries added by HostAliases."]
            lines += [f"{h['ip']}\t" + "\t".join(h.get("hostnames") or []) for h in spec["hostAliases"]]
        with open(os.path.join(pdir, "hosts"), "w") as f:
            f.write("\n".join(lines) + "\n")
        policy = spec.get("dnsPolicy", "ClusterFirst")
        dns = spec.get("dnsConfig") or {}
        if policy == "None":
            servers, search, options = [], [], []
        else:
            servers = [self.net.service_ip(10)]
            search = [f"{worker.ns}.svc.cluster.local", "svc.cluster.local", "cluster.local"]
            options = ["ndots:5"]
        servers += dns.get("nameservers") or []
        search += dns.get("searches") or []
        options += [o["name"] + (f":{o['value']}" if o.get("value") else "") for o in dns.get("options") or []]
        text = "".join(f"nameserver {s}\n" for s in servers)
        if search:
            text += "search " + " ".join(search) + "\n"
        if options:
            text += "options " + " ".join(options) + "\n"
        with open(os.path.join(pdir, "resolv.conf"), "w") as f:
            f.write(text)
        os.chmod(os.path.join(pdir, "hosts"), 0o644)
        os.chmod(os.path.join(pdir, "resolv.conf"), 0o644)

    # --- containers ----------------------------------------------------------------
    def pull_auth(self, worker, image):
        """Credentials for the image's registry from the pod's imagePullSecrets."""
        reg = registry_of(image)
        for ref in worker.spec.get("imagePullSecrets") or []:
            secret = self.cluster.store.get("secrets", worker.ns, ref.get("name"))
            if secret is None:
                continue
            data = secret.get("data") or {}
            try:
                if ".dockerconfigjson" in data:
                    auths = json.loads(base64.b64decode(data[".dockerconfigjson"])).get("auths", {})
                elif ".dockercfg" in data:
                    auths = json.loads(base64.b64decode(data[".dockercfg"]))
                else:
                    continue
            except ValueError:
                continue
            for server, entry in auths.items():
                host = re.sub(r"^https?://", "", server).split("/")[0]
                if host != reg:
                    continue
                user, password = entry.get("username"), entry.get("password")
                if entry.get("auth") and not user:
                    user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
                return {"username": user, "password": password, "serveraddress": reg}
        return None

    def ensure_image(self, worker, c, auth):
        image = c.spec["image"]
        policy = c.spec.get("imagePullPolicy", "IfNotPresent")
        reg = registry_of(image)
        have = self.engine.inspect_image(image)
        if reg != "docker.io" and image not in self.node_images:
            have = None  # built or pushed here, never pulled by the node
        if policy == "Never":
            if have is None:
                raise StartFailure("neverpull", f'Container image "{image}" is not present with pull policy of Never')
            return have
        if policy == "IfNotPresent" and have is not None:
            return have
        if not LOCAL_REGISTRY.match(reg):
            raise StartFailure("pull", cri_pull_error("Unknown", image, f'the fake kubelet pulls only '
                                       f'from registries on 127.0.0.1 (this machine reaches no other host); '
                                       f'registry "{reg}" refused'))
        with self.pull_locks[image]:
            try:
                self.engine.pull(image, auth)
            except EngineError as e:
                raise StartFailure("pull", containerd_pull_failure(image, reg, e))
        have = self.engine.inspect_image(image)
        if have is None:
            raise StartFailure("pull", cri_pull_error("Unknown", image, "not found after the pull"))
        self.node_images.add(image)
        return have

    @staticmethod
    def image_id(ref, info):
        """The kubelet's imageID: the digest of the repository the pod named
        (one image id can carry digests of several repositories)."""
        repo = ref.split("@", 1)[0]
        last = repo.rsplit("/", 1)[-1]
        if ":" in last:
            repo = repo[: len(repo) - len(last)] + last.split(":", 1)[0]
        digests = info.get("RepoDigests") or []
        for d in digests:
            if d.split("@", 1)[0] == repo:
                return d
        return digests[0] if digests else info["Id"]

    def start_container(self, worker, c, done):
        with self.cluster.lock:
            auth = self.pull_auth(worker, c.spec["image"])
            try:
                env = self.container_env(worker, c)
                env_error = None
            except StartFailure as e:
                env, env_error = None, e
            restart = c.restart_count

        def work():
            sandbox = worker.sandbox
            info = self.ensure_image(worker, c, auth)
            if env_error:
                raise env_error
            cfg = info.get("Config") or {}
            config, term = self.container_config(worker, c, sandbox, cfg, env, restart)
            try:
                cid = self.engine.create(self.cname(worker, c.name, restart), config)
            except EngineError as e:
                raise StartFailure("create", e.message)
            sandbox["containers"].append(cid)
            handle = {"id": cid, "container_id": "docker://" + cid,
                      "image_id": self.image_id(c.spec["image"], info),
                      "term": term, "policy": c.spec.get("terminationMessagePolicy", "File")}
            try:
                self.engine.start(cid)
            except EngineError as e:
                raise StartFailure("start", e.message)
            return handle
        self.loop.run_blocking(work, done)

    def container_env(self, worker, c):
        """Env in the kubelet's order: envFrom, env (with $(VAR) and valueFrom),
        then service links for names still free. Caller holds the lock."""
        st = self.cluster.store
        pod = st.get("pods", worker.ns, worker.name) or worker.pod
        env = collections.OrderedDict()
        links = self.service_env(worker)
        for ef in c.spec.get("envFrom") or []:
            for kind, res in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
                if kind in ef:
                    ref = ef[kind]
                    obj = st.get(res, worker.ns, ref.get("name"))
                    if obj is None:
                        if ref.get("optional"):
                            continue
                        raise StartFailure("config", f'{"configmap" if res == "configmaps" else "secret"} "{ref.get("name")}" not found')
                    for k, v in (obj.get("data") or {}).items():
                        env[ef.get("prefix", "") + k] = base64.b64decode(v).decode(errors="replace") if res == "secrets" else v
        for e in c.spec.get("env") or []:
            name = e["name"]
            if "valueFrom" in e:
                env[name] = self.value_from(worker, pod, c, e["valueFrom"])
            else:
                env[name] = expand(e.get("value", ""), {**links, **env})
        for k, v in links.items():
            env.setdefault(k, v)
        return env

    def value_from(self, worker, pod, c, vf):
        st = self.cluster.store
        if "fieldRef" in vf:
            path = vf["fieldRef"]["fieldPath"]
            m = re.match(r"^metadata\.(labels|annotations)\['(.+)'\]$", path)
            if m:
                return (pod["metadata"].get(m.group(1)) or {}).get(m.group(2), "")
            status = pod.get("status") or {}
            return {"metadata.name": worker.name, "metadata.namespace": worker.ns, "metadata.uid": worker.uid,
                    "spec.nodeName": worker.node, "spec.serviceAccountName": pod["spec"].get("serviceAccountName", ""),
                    "status.hostIP": self.net.node_ip, "status.hostIPs": self.net.node_ip,
                    "status.podIP": (worker.sandbox or {}).get("ip", status.get("podIP", "")),
                    "status.podIPs": (worker.sandbox or {}).get("ip", status.get("podIP", ""))}.get(path, "")
        if "resourceFieldRef" in vf:
            ref = vf["resourceFieldRef"]
            target = c.spec
            if ref.get("containerName"):
                target = next((x for x in (worker.spec.get("initContainers") or []) + worker.spec["containers"]
                               if x["name"] == ref["containerName"]), c.spec)
            kind, _, res = ref["resource"].partition(".")
            value = ((target.get("resources") or {}).get(kind) or {}).get(res)
            divisor = quantity(ref.get("divisor", "1"))
            if value is None:
                return str(os.cpu_count() or 1) if res == "cpu" else str(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
            return str(int(math.ceil(quantity(value) / divisor)))
        for kind, res, what in (("secretKeyRef", "secrets", "Secret"), ("configMapKeyRef", "configmaps", "ConfigMap")):
            if kind in vf:
                ref = vf[kind]
                obj = st.get(res, worker.ns, ref.get("name"))
                if obj is None:
                    if ref.get("optional"):
                        return ""
                    raise StartFailure("config", f'{"secret" if res == "secrets" else "configmap"} "{ref.get("name")}" not found')
                data = obj.get("data") or {}
                if ref["key"] not in data:
                    if ref.get("optional"):
                        return ""
                    raise StartFailure("config", f"couldn't find key {ref['key']} in {what} {worker.ns}/{ref.get('name')}")
                v = data[ref["key"]]
                return base64.b64decode(v).decode(errors="replace") if res == "secrets" else v
        return ""

    def service_env(self, worker):
        st = self.cluster.store
        out = collections.OrderedDict()
        services = []
        k = st.get("services", "default", "kubernetes")
        if worker.spec.get("enableServiceLinks", True):
            services = [s for s in st.items("services", worker.ns) if s is not k]
        for svc in services + ([k] if k else []):
            ip = svc["spec"].get("clusterIP")
            if not ip or ip == "None":
                continue
            name = svc["metadata"]["name"].upper().replace("-", "_")
            ports = svc["spec"].get("ports") or []
            if not ports:
                continue
            out[f"{name}_SERVICE_HOST"] = ip
            out[f"{name}_SERVICE_PORT"] = str(ports[0]["port"])
            for p in ports:
                if p.get("name"):
                    out[f"{name}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
            proto0 = ports[0].get("protocol", "TCP").lower()
            out[f"{name}_PORT"] = f"{proto0}://{ip}:{ports[0]['port']}"
            for p in ports:
                proto = p.get("protocol", "TCP")
                pre = f"{name}_PORT_{p['port']}_{proto}"
                out[pre] = f"{proto.lower()}://{ip}:{p['port']}"
                out[pre + "_PROTO"] = proto.lower()
                out[pre + "_PORT"] = str(p["port"])
                out[pre + "_ADDR"] = ip
        return out

    def container_config(self, worker, c, sandbox, image_cfg, env, restart):
        spec, cs = worker.spec, c.spec
        psc, csc = spec.get("securityContext") or {}, cs.get("securityContext") or {}
        merged = {**psc, **csc}
        # command and args against the image's ENTRYPOINT and CMD
        command = [expand(a, env) for a in cs.get("command") or []]
        args = [expand(a, env) for a in cs.get("args") or []]
        if command:
            argv = command + args
        elif args:
            argv = (image_cfg.get("Entrypoint") or []) + args
        else:
            argv = (image_cfg.get("Entrypoint") or []) + (image_cfg.get("Cmd") or [])
        if not argv:
            raise StartFailure("create", "Error response from daemon: No command specified")
        # users
        image_user = image_cfg.get("User") or ""
        uid = merged.get("runAsUser")
        gid = merged.get("runAsGroup")
        if merged.get("runAsNonRoot"):
            who = f'(pod: "{worker.name}_{worker.ns}({worker.uid})", container: {c.name})'
            if uid is not None:
                if int(uid) == 0:
                    raise StartFailure("config", f"container's runAsUser breaks non-root policy {who}")
            else:
                u = image_user.split(":")[0]
                if u in ("", "0", "root"):
                    raise StartFailure("config", f"container has runAsNonRoot and image will run as root {who}")
                if not u.isdigit():
                    raise StartFailure("config", f"container has runAsNonRoot and image has non-numeric user ({u}), "
                                                 f"cannot verify user is non-root {who}")
        user = ""
        if uid is not None:
            user = str(uid)
        elif image_user:
            user = image_user.split(":")[0]
        if gid is not None:
            user = f"{user or '0'}:{gid}"
        groups = [str(g) for g in psc.get("supplementalGroups") or []]
        if psc.get("fsGroup") is not None:
            groups.append(str(psc["fsGroup"]))
        # mounts
        pdir = sandbox["dir"]
        cdir = os.path.join(pdir, "containers", f"{c.name}-{restart}")
        os.makedirs(cdir, exist_ok=True)
        term = os.path.join(cdir, "termination-log")
        open(term, "w").close()
        os.chmod(term, 0o666)
        binds = [f"{term}:{cs.get('terminationMessagePath', '/dev/termination-log')}"]
        if not spec.get("hostNetwork"):
            binds += [f"{pdir}/hosts:/etc/hosts", f"{pdir}/resolv.conf:/etc/resolv.conf"]
        vols = {v["name"]: v for v in spec.get("volumes") or []}
        for m in cs.get("volumeMounts") or []:
            v = vols[m["name"]]
            src = v["hostPath"]["path"] if "hostPath" in v else os.path.join(pdir, "volumes", m["name"])
            if m.get("subPath"):
                src = os.path.join(src, expand(m["subPath"], env))
                if "hostPath" not in v:
                    os.makedirs(src, exist_ok=True)
                    os.chmod(src, 0o777)
            ro = m.get("readOnly") or "secret" in v or "configMap" in v
            binds.append(f"{src}:{m['mountPath']}" + (":ro" if ro else ""))
        caps = csc.get("capabilities") or {}
        host = {"NetworkMode": f"container:{sandbox['holder']}", "IpcMode": f"container:{sandbox['holder']}",
                "Binds": binds, "CapAdd": caps.get("add") or None, "CapDrop": caps.get("drop") or None,
                "Privileged": bool(csc.get("privileged")), "ReadonlyRootfs": bool(csc.get("readOnlyRootFilesystem")),
                "GroupAdd": groups or None, "SecurityOpt": [], "LogConfig": {"Type": "json-file", "Config": {}}}
        if spec.get("shareProcessNamespace"):
            host["PidMode"] = f"container:{sandbox['holder']}"
        if csc.get("allowPrivilegeEscalation") is False:
            host["SecurityOpt"].append("no-new-privileges")
        if (merged.get("seccompProfile") or {}).get("type") == "Unconfined":
            host["SecurityOpt"].append("seccomp=unconfined")
        res = cs.get("resources") or {}
        lim, req = res.get("limits") or {}, res.get("requests") or {}
        if "cpu" in lim:
            host["CpuPeriod"], host["CpuQuota"] = 100000, max(1000, int(quantity(lim["cpu"]) * 100000))
        if "memory" in lim:
            host["Memory"] = host["MemorySwap"] = int(quantity(lim["memory"]))
        if "cpu" in req:
            host["CpuShares"] = max(2, int(quantity(req["cpu"]) * 1024))
        env_list = [f"{k}={v}" for k, v in env.items()]
        if not spec.get("hostNetwork"):
            env_list.append(f"HOSTNAME={(spec.get('hostname') or worker.name)[:63]}")
        config = {"Image": cs["image"], "Entrypoint": argv[:1], "Cmd": argv[1:], "Env": env_list,
                  "Labels": self.labels(worker, c.name), "Tty": bool(cs.get("tty")),
                  "OpenStdin": bool(cs.get("stdin")), "StdinOnce": bool(cs.get("stdinOnce")),
                  "AttachStdin": False, "AttachStdout": False, "AttachStderr": False, "HostConfig": host}
        if cs.get("workingDir"):
            config["WorkingDir"] = cs["workingDir"]
        if user:
            config["User"] = user
        return config, term

    def watch_exit(self, worker, c, handle, on_exit):
        def wait():
            try:
                self.engine.wait(handle["id"])
                st = self.engine.inspect(handle["id"])["State"]
            except EngineError:
                st = {"ExitCode": 137, "FinishedAt": rfc3339()}
            code = int(st.get("ExitCode", 0))
            info = {"exitCode": code, "finishedAt": _trim_time(st.get("FinishedAt")) or rfc3339()}
            if st.get("OOMKilled"):
                info["reason"] = "OOMKilled"
            info["message"] = self.termination_message(handle, code)
            self.loop.call_soon(lambda: on_exit(info))
        threading.Thread(target=wait, daemon=True).start()

    def termination_message(self, handle, code):
        try:
            with open(handle["term"], "rb") as f:
                msg = f.read(4096)
        except OSError:
            msg = b""
        if not msg and code != 0 and handle.get("policy") == "FallbackToLogsOnError":
            try:
                resp, conn = self.engine.logs(handle["id"], tail=80)
                try:
                    msg = b"".join(d for _, d in demux(resp.read))[-2048:]
                finally:
                    conn.close()
            except EngineError:
                msg = b""
        return msg.decode(errors="replace")

    def kill(self, worker, c, handle, grace):
        def work():
            if grace <= 0:
                self.engine.kill(handle["id"])
            else:
                self.engine.stop(handle["id"], grace)
        self.loop.run_blocking(work)

    def remove_container(self, worker, handle):
        self.loop.run_blocking(lambda: self.engine.remove(handle["id"]))

    def remove_pod(self, worker, sandbox, done=None):
        def work():
            if sandbox:
                for cid in sandbox["containers"]:
                    self.engine.remove(cid)
                self.engine.remove(sandbox["holder"])
                self.net.detach(worker.uid)
                vols = os.path.join(sandbox["dir"], "volumes")
                for v in os.listdir(vols) if os.path.isdir(vols) else []:
                    subprocess.run(["umount", os.path.join(vols, v)], capture_output=True)
                shutil.rmtree(sandbox["dir"], ignore_errors=True)
        self.loop.run_blocking(work, (lambda r, e: done()) if done else None)

    # --- probes ---------------------------------------------------------------------
    def probe(self, worker, c, probe, done):
        timeout = float(probe.get("timeoutSeconds", 1))
        ip = (worker.sandbox or {}).get("ip")

        def work():
            if "exec" in probe:
                return self.run_exec(c.handle["id"], probe["exec"]["command"], timeout)[0] == 0
            port = probe.get("httpGet", probe.get("tcpSocket", {})).get("port")
            port = self.named_port(c, port)
            if "tcpSocket" in probe:
                with socket.create_connection((probe["tcpSocket"].get("host") or ip, port), timeout=timeout):
                    return True
            hg = probe["httpGet"]
            conn = http.client.HTTPConnection(hg.get("host") or ip, port, timeout=timeout)
            try:
                conn.request("GET", hg.get("path", "/"), headers={h["name"]: h["value"] for h in hg.get("httpHeaders") or []})
                return 200 <= conn.getresponse().status < 400
            finally:
                conn.close()
        self.loop.run_blocking(work, lambda ok, err: done(bool(ok) and err is None))

    @staticmethod
    def named_port(c, port):
        if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
            return int(port)
        for p in c.spec.get("ports") or []:
            if p.get("name") == port:
                return p["containerPort"]
        return 0

    def run_exec(self, cid, cmd, timeout):
        eid = self.engine.exec_create(cid, cmd, False, False)
        stream = self.engine.exec_start(eid, False)
        stream.sock.settimeout(timeout)
        out = b""
        try:
            for _, data in demux(stream.read):
                out += data[:65536 - len(out)]
        except socket.timeout:
            stream.close()
            return -1, b"command timed out"
        stream.close()
        for _ in range(50):
            st = self.engine.exec_inspect(eid)
            if not st.get("Running"):
                return st.get("ExitCode", -1), out
            time.sleep(0.02)
        return -1, out

    # --- streaming ----------------------------------------------------------------------
    def exec_process(self, worker, c, command, stdin, tty):
        return DockerStream(self.engine, c.handle["id"], command, stdin, tty, attach=False,
                            drop=bool(self.cluster.config.get("exec_drop")))

    def attach_process(self, worker, c, stdin, tty):
        if stdin and not c.spec.get("stdin"):
            raise ExecError(internal_error(f"cannot attach to container {c.name}: the container has no stdin (spec.stdin=false)"))
        return DockerStream(self.engine, c.handle["id"], None, stdin, bool(c.spec.get("tty")), attach=True, drop=False)

    def logs(self, worker, c, opts):
        handle = (c.prev_handle if opts.get("previous") else c.handle) if c else None
        if handle is None:
            return iter([b""])
        since = time.time() - opts["sinceSeconds"] if opts.get("sinceSeconds") else None
        resp, conn = self.engine.logs(handle["id"], tail=opts.get("tailLines"), follow=opts.get("follow"),
                                      since=since, timestamps=opts.get("timestamps"))

        def gen():
            try:
                for _, data in demux(resp.read1 if hasattr(resp, "read1") else resp.read):
                    yield data
            finally:
                conn.close()
        return gen()

    def shutdown(self):
        """Every container this fake made, gone."""
        try:
            for c in self.engine.containers(f"forge.k8s-fake={self.instance}"):
                self.engine.remove(c["Id"])
        except EngineError:
            pass
        vols = self.root
        for pod in os.listdir(vols) if os.path.isdir(vols) else []:
            vdir = os.path.join(vols, pod, "volumes")
            for v in os.listdir(vdir) if os.path.isdir(vdir) else []:
                subprocess.run(["umount", os.path.join(vdir, v)], capture_output=True)


def _trim_time(t):
    if not t or t.startswith("0001"):
        return None
    return t.split(".")[0].rstrip("Z") + "Z"


class DockerStream:
    """An exec or attach through the engine's hijacked stream, for a Session."""

    def __init__(self, engine, cid, command, stdin, tty, attach, drop):
        self.engine, self.cid, self.command = engine, cid, command
        self.use_stdin, self.tty, self.attach, self.drop = stdin, tty, attach, drop
        self.stream = None
        self.eid = None
        self.stdin_closed = False
        self.failure = None

    def start(self):
        try:
            if self.attach:
                self.stream = self.engine.attach(self.cid, self.use_stdin)
            else:
                self.eid = self.engine.exec_create(self.cid, self.command, self.use_stdin, self.tty)
                self.stream = self.engine.exec_start(self.eid, self.tty)
        except EngineError as e:
            raise ExecError(internal_error(f"error executing command in container: {e.message}"))

    def write(self, data):
        if not self.stdin_closed:
            self.stream.write(data)

    def close_stdin(self):
        if self.stream is not None and not self.stdin_closed and self.use_stdin:
            self.stdin_closed = True
            self.stream.close_write()

    def pump(self, send):
        if self.tty:
            while True:
                data = self.stream.read(32768)
                if not data:
                    return
                send(1, data)
        first = True
        for stream, data in demux(self.stream.read):
            if first and not self.attach and b"OCI runtime exec failed" in data:
                self.failure = data.decode(errors="replace").strip()
                continue
            first = False
            send(2 if stream == 2 else 1, data)

    def finish(self):
        self.stream.close()
        if self.attach:
            return {"metadata": {}, "status": "Success"}
        code = -1
        for _ in range(100):
            st = self.engine.exec_inspect(self.eid)
            if not st.get("Running"):
                code = st.get("ExitCode")
                break
            time.sleep(0.02)
        if self.failure or code in (126, 127) and self.failure:
            return internal_error(f"error executing command in container: failed to exec in container: {self.failure}")
        return exit_status(code if code is not None else -1, self.command)

    def resize(self, w, h):
        if self.eid and self.tty:
            try:
                self.engine.exec_resize(self.eid, w, h)
            except EngineError:
                pass

    def client_gone(self):
        pass
