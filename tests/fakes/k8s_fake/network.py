"""Real mode's node network: a bridge, a veth per pod, NetworkPolicy as
iptables rules in each pod's network namespace, Services as DNAT rules there
(what kube-proxy's iptables mode does, per pod rather than per node), and a
DNS server for cluster.local names.

Addresses (K is picked free on this machine, 16..239, and held by a lock in
/run/forge-k8s-fake): the node 10.244.K.1 on bridge fkbK (a host process that
should be reachable from pods listens there: it is the node's InternalIP);
kube-dns 10.244.K.2 (a static pod object in kube-system, k8s-app=kube-dns);
pods 10.244.K.3-254; Services 10.96.K.0/24 (kubernetes .1, kube-dns .10).
Pods get routes to those two ranges only: no default route, so nothing in a
pod reaches beyond this machine (this machine's network rule); a real pod
would reach the internet.

Policy semantics (networking.k8s.io/v1): a pod selected by no policy with
Egress (Ingress) in its policyTypes is not isolated in that direction; one
selected by any is allowed only what the union of their rules allows (peers:
podSelector in the policy's namespace, namespaceSelector, both, ipBlock with
except; ports with protocol, numbers, names, endPort). Replies of allowed
connections pass (conntrack); loopback is never policed; a pod can always
reach itself. Traffic between a pod and its node: node_traffic "from-node"
(default: the node reaches pods, e.g. probes; pods' egress to the node is
policed, as Calico and Cilium do by default), "both" (never policed, as the
NetworkPolicy docs allow), "none". Egress is policed after a Service's DNAT:
a policy allows the endpoint, not the ClusterIP. Denied packets are dropped
(policy_action "drop"; "reject" answers with port-unreachable instead).
Rules are recomputed (debounced) when pods, namespaces, policies, services
or endpoint slices change, and applied atomically with iptables-restore.
"""
import fcntl
import ipaddress
import json
import os
import socket
import struct
import subprocess
import threading
import time

from .meta import label_selector, rfc3339

LOCK_DIR = "/run/forge-k8s-fake"


def run(argv, input=None, check=True):
    p = subprocess.run(argv, input=input, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise OSError(f"{' '.join(argv[:6])}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class NodeNetwork:
    def __init__(self, engine):
        self.engine = engine
        os.makedirs(LOCK_DIR, exist_ok=True)
        self.collect_leftovers()
        self.k, self.lock_fd = self.pick()
        k = self.k
        self.bridge = f"fkb{k}"
        self.node_ip, self.dns_ip = f"10.244.{k}.1", f"10.244.{k}.2"
        self.pod_cidr, self.service_cidr = f"10.244.{k}.0/24", f"10.96.{k}.0/24"
        self.free = [f"10.244.{k}.{i}" for i in range(3, 255)]
        self.pods = {}          # uid -> {"pid", "ip", "veth", "rules"}
        self.cluster = None
        self.dirty = False
        self.pending = False
        self.applied = 0
        self.lock = threading.Lock()
        try:
            run(["ip", "link", "add", self.bridge, "type", "bridge"])
            run(["ip", "addr", "add", f"{self.node_ip}/24", "dev", self.bridge])
            run(["ip", "addr", "add", f"{self.dns_ip}/24", "dev", self.bridge])
            run(["ip", "link", "set", self.bridge, "up"])
            self.dns = DnsServer(self)
        except OSError:
            self.teardown()
            raise

    def pick(self):
        used = run(["ip", "-4", "-o", "addr"]).stdout + run(["ip", "-o", "link"]).stdout
        for k in list(range(16, 240)):
            if f" 10.244.{k}." in used or f"fkb{k}:" in used or f" 10.96.{k}." in used:
                continue
            fd = os.open(f"{LOCK_DIR}/net-{k}.lock", os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            return k, fd
        raise OSError("no free 10.244.K.0/24 for the fake's node network")

    def collect_leftovers(self):
        """Containers and bridges of fakes that died without cleaning up (their
        pid is gone, their lock is free). Never anything else."""
        try:
            for c in self.engine.containers("forge.k8s-fake.pid"):
                pid = int(c["Labels"].get("forge.k8s-fake.pid", "0"))
                if pid and not _alive(pid):
                    self.engine.remove(c["Id"])
        except Exception:
            pass
        for line in run(["ip", "-o", "link", "show", "type", "bridge"], check=False).stdout.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if not name.startswith("fkb") or not name[3:].isdigit():
                continue
            path = f"{LOCK_DIR}/net-{name[3:]}.lock"
            if not os.path.exists(path):
                continue
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                run(["ip", "link", "del", name], check=False)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:
                pass
            finally:
                os.close(fd)

    def service_ip(self, n):
        return f"10.96.{self.k}.{n}"

    def bootstrap(self, cluster):
        """kube-dns as the cluster would have it: a Running pod object in
        kube-system (the fake's DNS server on 10.244.K.2 is its process)."""
        self.cluster = cluster
        node = next(iter(cluster.kubelet_nodes))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "coredns-fake", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"},
            "annotations": {"fake.forge.dev/static": "true"}},
            "spec": {"nodeName": node, "containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.11.1",
                                                       "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                                                 {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"}]}]},
            "status": {"phase": "Running", "podIP": self.dns_ip, "podIPs": [{"ip": self.dns_ip}],
                       "hostIP": self.node_ip, "startTime": rfc3339(),
                       "conditions": [{"type": t, "status": "True", "lastTransitionTime": rfc3339()}
                                      for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
                       "containerStatuses": [{"name": "coredns", "ready": True, "started": True, "restartCount": 0,
                                              "image": "registry.k8s.io/coredns/coredns:v1.11.1", "imageID": "",
                                              "state": {"running": {"startedAt": rfc3339()}}}]}}
        cluster.store.create("pods", pod)

    # --- pods ---------------------------------------------------------------------
    def attach(self, uid, pid):
        """A veth into the holder's namespace; returns the pod's IP. Rules are
        applied before any container of the pod starts."""
        with self.lock:
            if not self.free:
                raise OSError("no free pod address on the fake node")
            ip = self.free.pop(0)
            n = int(ip.rsplit(".", 1)[1])
        host, peer = f"fk{self.k}p{n}", f"fk{self.k}q{n}"
        try:
            run(["ip", "link", "del", host], check=False)
            run(["ip", "link", "add", host, "type", "veth", "peer", "name", peer])
            run(["ip", "link", "set", host, "master", self.bridge, "up"])
            run(["ip", "link", "set", peer, "netns", str(pid)])
            ns = ["nsenter", f"--net=/proc/{pid}/ns/net"]
            run(ns + ["ip", "link", "set", peer, "name", "eth0"])
            run(ns + ["ip", "addr", "add", f"{ip}/24", "dev", "eth0"])
            run(ns + ["ip", "link", "set", "eth0", "up"])
            run(ns + ["ip", "link", "set", "lo", "up"])
            run(ns + ["ip", "route", "add", self.service_cidr, "via", self.node_ip])
        except OSError:
            run(["ip", "link", "del", host], check=False)
            with self.lock:
                self.free.append(ip)
            raise
        self.pods[uid] = {"pid": pid, "ip": ip, "veth": host, "rules": None}
        with self.cluster.lock:
            snap = self.snapshot(extra={uid: ip})
        self.apply(uid, self.render(uid, snap))
        return ip

    def detach(self, uid):
        info = self.pods.pop(uid, None)
        if info is None:
            return
        run(["ip", "link", "del", info["veth"]], check=False)
        with self.lock:
            self.free.append(info["ip"])

    # --- recomputing ------------------------------------------------------------------
    def on_event(self, event):
        if event.resource not in ("pods", "namespaces", "networking.k8s.io/networkpolicies", "services",
                                  "discovery.k8s.io/endpointslices"):
            return
        if event.resource == "pods" and event.type == "MODIFIED" and event.old is not None:
            a, b = event.old, event.obj
            if (a.get("status", {}).get("podIP"), a["metadata"].get("labels"), a.get("status", {}).get("phase")) == \
                    (b.get("status", {}).get("podIP"), b["metadata"].get("labels"), b.get("status", {}).get("phase")):
                return
        self.dirty = True
        if not self.pending and self.cluster is not None:
            self.pending = True
            self.cluster.loop.call_later(0.05, self.recompute)

    def recompute(self):
        """In the loop (under the lock): snapshot; the iptables work goes to the pool."""
        self.pending = False
        self.dirty = False
        snap = self.snapshot()
        uids = list(self.pods)

        def work():
            for uid in uids:
                if uid in self.pods:
                    self.apply(uid, self.render(uid, snap))
        self.cluster.loop.run_blocking(work)

    def snapshot(self, extra=None):
        """What the rules depend on, copied out of the store (caller holds the lock)."""
        st = self.cluster.store
        pods = []
        for p in st.items("pods"):
            ip = p.get("status", {}).get("podIP") or (extra or {}).get(p["metadata"]["uid"])
            if not ip or p["spec"].get("hostNetwork") or p.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                continue
            ports = [(q.get("name"), q.get("protocol", "TCP"), q["containerPort"])
                     for c in p["spec"].get("containers") or [] for q in c.get("ports") or []]
            pods.append({"uid": p["metadata"]["uid"], "ns": p["metadata"]["namespace"],
                         "labels": p["metadata"].get("labels") or {}, "ip": ip, "ports": ports})
        return {"pods": pods,
                "namespaces": {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in st.items("namespaces")},
                "policies": [p for p in st.items("networking.k8s.io/networkpolicies")],
                "services": [s for s in st.items("services")],
                "slices": [s for s in st.items("discovery.k8s.io/endpointslices")],
                "node": next(iter(self.cluster.kubelet_nodes)),
                "config": {k: self.cluster.config.get(k) for k in ("node_traffic", "policy_action")}}

    def apply(self, uid, text):
        info = self.pods.get(uid)
        if info is None or info["rules"] == text:
            return
        p = subprocess.run(["nsenter", f"--net=/proc/{info['pid']}/ns/net", "iptables-restore", "-w"],
                           input=text, capture_output=True, text=True)
        if p.returncode != 0:
            if _alive(info["pid"]):
                raise OSError(f"iptables-restore in pod {uid}: {p.stderr.strip()}")
            return
        info["rules"] = text
        self.applied += 1

    # --- rendering ------------------------------------------------------------------------
    def render(self, uid, snap):
        me = next((p for p in snap["pods"] if p["uid"] == uid), None)
        cfg = snap["config"]
        action = "REJECT --reject-with icmp-port-unreachable" if cfg.get("policy_action") == "reject" else "DROP"
        node_traffic = cfg.get("node_traffic") or "from-node"
        filt = [":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]",
                ":FAKE-EGRESS - [0:0]", ":FAKE-INGRESS - [0:0]", ":FAKE-SERVICES - [0:0]",
                "-A OUTPUT -o lo -j ACCEPT",
                "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
                "-A OUTPUT -j FAKE-SERVICES", "-A OUTPUT -j FAKE-EGRESS",
                "-A INPUT -i lo -j ACCEPT",
                "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT"]
        if node_traffic in ("from-node", "both"):
            filt.append(f"-A INPUT -s {self.node_ip}/32 -j ACCEPT")
        filt.append("-A INPUT -j FAKE-INGRESS")
        extra_chains = []
        for direction, chain in (("Egress", "FAKE-EGRESS"), ("Ingress", "FAKE-INGRESS")):
            allowed = self.allowed(me, direction, snap) if me else None
            if allowed is None:
                filt.append(f"-A {chain} -j ACCEPT")
                continue
            if direction == "Egress" and node_traffic == "both":
                filt.append(f"-A {chain} -d {self.node_ip}/32 -j ACCEPT")
            flag = "-d" if direction == "Egress" else "-s"
            for i, (peer, ports) in enumerate(allowed):
                match = []
                if peer[0] == "ip":
                    match = [f"{flag} {peer[1]}/32"]
                elif peer[0] == "cidr":
                    if peer[2]:
                        sub = f"FAKE-{direction[0]}{i}"
                        extra_chains.append(f":{sub} - [0:0]")
                        for e in peer[2]:
                            filt.append(f"-A {sub} {flag} {e} -j RETURN")
                        for pm in _port_matches(ports):
                            filt.append(f"-A {sub} {flag} {peer[1]} {pm}-j ACCEPT".replace("  ", " "))
                        filt.append(f"-A {chain} -j {sub}")
                        continue
                    match = [f"{flag} {peer[1]}"]
                for pm in _port_matches(ports):
                    filt.append(" ".join([f"-A {chain}"] + match + ([pm.strip()] if pm.strip() else []) + ["-j ACCEPT"]))
            filt.append(f"-A {chain} -j {action}")
        nat = [":PREROUTING ACCEPT [0:0]", ":INPUT ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]", ":POSTROUTING ACCEPT [0:0]"]
        for svc, port, endpoints in self.service_endpoints(snap):
            proto = port.get("protocol", "TCP").lower()
            ip = svc["spec"]["clusterIP"]
            base = f"-A OUTPUT -d {ip}/32 -p {proto} -m {proto} --dport {port['port']}"
            if not endpoints:
                filt.append(f"-A FAKE-SERVICES -d {ip}/32 -p {proto} -m {proto} --dport {port['port']} "
                            "-j REJECT --reject-with icmp-port-unreachable")
                continue
            n = len(endpoints)
            for i, (eip, eport) in enumerate(endpoints):
                prob = f" -m statistic --mode random --probability {1.0 / (n - i):.11f}" if i < n - 1 else ""
                nat.append(f"{base}{prob} -j DNAT --to-destination {eip}:{eport}")
        filt[6:6] = extra_chains
        return "*filter\n" + "\n".join(filt) + "\nCOMMIT\n*nat\n" + "\n".join(nat) + "\nCOMMIT\n"

    def allowed(self, me, direction, snap):
        """None if not isolated; else [(peer, ports)] with peer ("ip", ip) |
        ("cidr", cidr, excepts) | ("any",) and ports [(proto, "a[:b]")] or None (all)."""
        policies = [p for p in snap["policies"] if p["metadata"]["namespace"] == me["ns"]
                    and direction in (p["spec"].get("policyTypes") or [])
                    and label_selector(p["spec"].get("podSelector") or {}).matches(me["labels"])]
        if not policies:
            return None
        out = []
        key, peers_key = ("egress", "to") if direction == "Egress" else ("ingress", "from")
        for pol in policies:
            for rule in pol["spec"].get(key) or []:
                ports = rule.get("ports")
                peers = rule.get(peers_key)
                targets = []
                if not peers:
                    targets.append(("any",))
                for peer in peers or []:
                    if "ipBlock" in peer:
                        targets.append(("cidr", peer["ipBlock"]["cidr"], peer["ipBlock"].get("except") or []))
                        continue
                    for q in self.select(pol["metadata"]["namespace"], peer, snap):
                        targets.append(("ip", q["ip"], q))
                for t in targets:
                    if not ports:
                        out.append((t[:2] if t[0] == "ip" else t, None))
                        continue
                    numeric, named = [], []
                    for pp in ports:
                        proto = pp.get("protocol", "TCP").lower()
                        v = pp.get("port")
                        if v is None:
                            numeric.append((proto, None))
                        elif isinstance(v, int) or (isinstance(v, str) and v.isdigit()):
                            end = pp.get("endPort")
                            numeric.append((proto, f"{int(v)}:{end}" if end else str(int(v))))
                        else:
                            named.append((proto, v))
                    if numeric:
                        out.append((t[:2] if t[0] == "ip" else t, numeric))
                    for proto, name in named:
                        # a named port is the destination pod's (egress) or this pod's (ingress)
                        holders = [me] if direction == "Ingress" else ([t[2]] if t[0] == "ip" else snap["pods"])
                        for h in holders:
                            for pname, pproto, num in h["ports"]:
                                if pname == name and pproto.lower() == proto:
                                    dest = t[:2] if t[0] == "ip" else (("ip", h["ip"]) if direction == "Egress" else t)
                                    out.append((dest, [(proto, str(num))]))
        return out

    def select(self, policy_ns, peer, snap):
        pod_sel = label_selector(peer["podSelector"]) if "podSelector" in peer else None
        if "namespaceSelector" in peer:
            ns_sel = label_selector(peer["namespaceSelector"])
            namespaces = {n for n, labels in snap["namespaces"].items() if ns_sel.matches(labels)}
        else:
            namespaces = {policy_ns}
        return [q for q in snap["pods"] if q["ns"] in namespaces and (pod_sel is None or pod_sel.matches(q["labels"]))]

    def service_endpoints(self, snap):
        """(service, port, [(ip, port)]) for every ClusterIP service, from its
        EndpointSlices (ready endpoints; internalTrafficPolicy Local keeps the
        ones on this node)."""
        out = []
        for svc in snap["services"]:
            ip = svc["spec"].get("clusterIP")
            if not ip or ip == "None" or svc["spec"].get("type") == "ExternalName":
                continue
            name, ns = svc["metadata"]["name"], svc["metadata"]["namespace"]
            slices = [s for s in snap["slices"] if s["metadata"]["namespace"] == ns
                      and (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name]
            local = svc["spec"].get("internalTrafficPolicy") == "Local"
            for port in svc["spec"].get("ports") or []:
                eps = []
                for s in slices:
                    sp = next((p for p in s.get("ports") or [] if (p.get("name") or "") == (port.get("name") or "")
                               and p.get("protocol", "TCP") == port.get("protocol", "TCP")), None)
                    if sp is None or sp.get("port") is None:
                        continue
                    for e in s.get("endpoints") or []:
                        if (e.get("conditions") or {}).get("ready") is False:
                            continue
                        if local and e.get("nodeName") != snap["node"]:
                            continue
                        for a in e.get("addresses") or []:
                            eps.append((a, sp["port"]))
                out.append((svc, port, sorted(set(eps))))
        return out

    def describe(self):
        return {"node_ip": self.node_ip, "dns_ip": self.dns_ip, "pod_cidr": self.pod_cidr,
                "service_cidr": self.service_cidr, "bridge": self.bridge, "rule_sets_applied": self.applied,
                "pods": {uid: {"ip": i["ip"], "rules": i["rules"]} for uid, i in self.pods.items()}}

    def teardown(self):
        dns = getattr(self, "dns", None)
        if dns:
            dns.stop()
        for uid in list(getattr(self, "pods", {})):
            self.detach(uid)
        run(["ip", "link", "del", getattr(self, "bridge", "fkb-none")], check=False)
        if getattr(self, "lock_fd", None) is not None:
            os.close(self.lock_fd)
            self.lock_fd = None


def _port_matches(ports):
    if ports is None:
        return [""]
    out = []
    for proto, spec in ports:
        out.append(f"-p {proto} " + (f"-m {proto} --dport {spec} " if spec else ""))
    return out


class DnsServer:
    """cluster.local A records over UDP on kube-dns's pod address: Services
    (<svc>.<ns>.svc.cluster.local: the ClusterIP, or a headless Service's
    ready endpoints) and pods (<a-b-c-d>.<ns>.pod.cluster.local). Anything
    else is NXDOMAIN: this server never forwards (the network rule)."""

    def __init__(self, net):
        self.net = net
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((net.dns_ip, 53))
        self.stopped = False
        self.queries = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def stop(self):
        self.stopped = True
        self.sock.close()

    def serve(self):
        while not self.stopped:
            try:
                data, addr = self.sock.recvfrom(4096)
            except OSError:
                return
            try:
                self.sock.sendto(self.answer(data), addr)
            except (OSError, ValueError, IndexError, struct.error):
                continue

    def answer(self, q):
        self.queries += 1
        qid, flags = struct.unpack(">HH", q[:4])
        i, labels = 12, []
        while q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode().lower())
            i += 1 + q[i]
        qtype, _ = struct.unpack(">HH", q[i + 1:i + 5])
        question = q[12:i + 5]
        ips, known = self.lookup(labels)
        rcode = 0 if known else 3
        answers = b""
        if qtype == 1:
            for ip in ips:
                answers += b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + socket.inet_aton(ip)
        n = len(ips) if qtype == 1 else 0
        hdr = struct.pack(">HHHHHH", qid, 0x8000 | (flags & 0x0100) | 0x0400 | rcode, 1, n, 0, 0)
        return hdr + question + answers

    def lookup(self, labels):
        if labels[-2:] != ["cluster", "local"]:
            return [], False
        c = self.net.cluster
        with c.lock:
            if len(labels) == 5 and labels[2] == "svc":
                svc = c.store.get("services", labels[1], labels[0])
                if svc is None:
                    return [], False
                ip = svc["spec"].get("clusterIP")
                if ip and ip != "None":
                    return [ip], True
                return [a for s in c.store.items("discovery.k8s.io/endpointslices", labels[1])
                        if (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == labels[0]
                        for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready") is not False
                        for a in e.get("addresses") or []], True
            if len(labels) == 5 and labels[2] == "pod":
                ip = labels[0].replace("-", ".")
                try:
                    ipaddress.ip_address(ip)
                    return [ip], True
                except ValueError:
                    return [], False
        return [], False
