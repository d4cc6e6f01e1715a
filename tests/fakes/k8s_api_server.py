#!/usr/bin/env python3
"""A fake Kubernetes API server for forge's tests and benchmarks.

A TEST DOUBLE, NOT A PRODUCT: it stands in for a cluster at one seam (the
Kubernetes API) where no real cluster can run on this machine. It is written
from the Kubernetes API reference and the kubelet's and API server's
documented behaviour, never from what forge's code assumes; where it differs
from a real cluster it says so below and in docs/k8s-backend.md ("Testing").

Two modes:

  --mode real (default)  every Pod is Docker containers on this machine's
      engine (/var/run/docker.sock): a holder container with --network none
      owns the pod's network namespace, which gets a veth to a bridge the fake
      makes (10.244.K.0/24, the node's address 10.244.K.1, K picked free);
      every container joins it (localhost is shared), shares its IPC
      namespace and hostname; emptyDir/configMap/secret volumes; init
      containers, native sidecars, probes, termination messages, logs, exec
      and attach into the real containers; images from registries on
      127.0.0.1 only. NetworkPolicies are enforced with iptables rules in each
      pod's namespace; Services get ClusterIPs (10.96.K.0/24) that pods reach
      through DNAT rules kube-proxy-style, and names through a DNS server the
      fake runs (kube-dns, 10.96.K.10 -> 10.244.K.2).
  --mode scale           pods are not processes: configurable latencies for
      scheduling, image pulls and starts, simulated container runs and exits,
      many nodes; exec runs commands as host processes (the unit tests).

Both modes: API Priority and Fairness-like 429s, watch 410s, evictions, an
API server restart, all set through POST /_fake/config and the other
/_fake endpoints (see k8s_fake/control.py); counters by verb and resource in
GET /_fake/stats. Prints "PORT <n>" on stdout once listening, and nothing
else on stdout.

The API subset served (JSON only; no protobuf, no server-side apply beyond a
merge, no OpenAPI documents):
  core/v1: pods (+ status, log, exec, attach, binding, eviction), services,
    endpoints, secrets, configmaps, serviceaccounts, events, namespaces,
    nodes; networking.k8s.io/v1 networkpolicies; discovery.k8s.io/v1
    endpointslices; node.k8s.io/v1 runtimeclasses; flowcontrol.apiserver.k8s.io/v1
    flowschemas and prioritylevelconfigurations (used to classify requests);
    rbac.authorization.k8s.io/v1, apps/v1 (deployments, statefulsets,
    daemonsets) and policy/v1 poddisruptionbudgets are stored only: no
    controller runs them and RBAC is not enforced.
  verbs: get, list (labelSelector with set-based requirements, fieldSelector,
    limit/continue), watch (resourceVersion, allowWatchBookmarks,
    sendInitialEvents, timeoutSeconds; 410 Expired as an ERROR event),
    create (generateName, dryRun), update (409 on a stale resourceVersion),
    patch (merge, JSON, strategic merge as a name-keyed merge), delete
    (gracePeriodSeconds, preconditions, finalizers), deletecollection.
  admission: namespaces must exist; the ServiceAccount must exist
    ("default" is made in every namespace); RuntimeClass must exist; Pod
    Security Admission (namespace label pod-security.kubernetes.io/enforce,
    default --pod-security, "baseline": hostNetwork pods are refused with
    PSA's 403 unless --allow-host-network).
"""
import argparse
import os
import shutil
import signal
import ssl
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from k8s_fake.cluster import Cluster  # noqa: E402
from k8s_fake.server import Handler, Server  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description="A fake Kubernetes API server (a test double).")
    parser.add_argument("--mode", choices=("real", "scale"), default="real")
    parser.add_argument("--token", required=True, help="the bearer token clients must send")
    parser.add_argument("--user", default="forge-test", help="the user that token authenticates as")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--start-delay", type=float, default=0.05)
    parser.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate")
    parser.add_argument("--tls-key", help="and this PEM key")
    parser.add_argument("--tls-client-ca", help="require client certificates signed by this CA; "
                        "a verified certificate authenticates like the token")
    parser.add_argument("--namespace", action="append", default=[], help="a namespace to create at start")
    parser.add_argument("--pod-security", choices=("privileged", "baseline", "restricted"), default="baseline",
                        help="Pod Security level for namespaces without the enforce label")
    parser.add_argument("--allow-host-network", action="store_true",
                        help="accept hostNetwork pods (the default level becomes privileged)")
    parser.add_argument("--nodes", type=int, default=None, help="nodes (scale mode; default 1, real mode: 1)")
    parser.add_argument("--node-cpu", default=None)
    parser.add_argument("--node-memory", default=None)
    parser.add_argument("--node-pods", type=int, default=110)
    parser.add_argument("--pause-image", default="forge-busybox:latest",
                        help="real mode: the image of the holder container (needs sh and sleep)")
    parser.add_argument("--docker-socket", default="/var/run/docker.sock")
    args = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="fake-kubelet-")
    level = "privileged" if args.allow_host_network else args.pod_security
    nodes = {"count": args.nodes or 1, "pods": args.node_pods}
    if args.node_cpu:
        nodes["cpu"] = args.node_cpu
    if args.node_memory:
        nodes["memory"] = args.node_memory
    cluster = Cluster(args.mode, args.token, args.user, level, nodes, args.namespace, scratch)
    cluster.config["start_delay"] = args.start_delay
    network = None
    if args.mode == "real":
        from k8s_fake.engine import Engine, EngineError
        from k8s_fake.network import NodeNetwork
        from k8s_fake.runtime_docker import DockerRuntime
        try:
            engine = Engine(args.docker_socket)
            engine.ping()
            network = NodeNetwork(engine)
            runtime = DockerRuntime(cluster, engine, network, args.pause_image, scratch)
            nodes["count"] = 1
            if not args.node_cpu:
                nodes["cpu"] = str(os.cpu_count() or 1)
            if not args.node_memory:
                nodes["memory"] = "%dKi" % (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024)
            nodes["pod_cidr"] = network.pod_cidr
        except (EngineError, OSError) as e:
            print(f"k8s_api_server: real mode needs the Docker engine and ip/iptables: {e}", file=sys.stderr)
            if network is not None:
                network.teardown()
            sys.exit(69)
    else:
        from k8s_fake.runtime_sim import SimRuntime
        runtime = SimRuntime(cluster)
    cluster.start(runtime, network)

    Handler.cluster = cluster
    context = None
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.tls_client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(args.tls_client_ca)
    server = Server(("127.0.0.1", args.port), Handler, context)
    restarted = threading.Event()
    stopping = threading.Event()
    restart_lock = threading.Lock()

    def server_restart(downtime):
        """Connections dropped, the port closed for downtime, state kept."""
        with restart_lock:
            port = server.server_address[1]
            cluster.restarts += 1
            server.shutdown()
            server.socket.close()
            server.drop_connections()
            if cluster.config.get("restart_compacts", True):
                with cluster.lock:
                    cluster.store.expire()
            time.sleep(downtime)
            server.rebind(port)
            restarted.set()
    cluster.server_restart = server_restart

    def terminate(*_):
        stopping.set()
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, terminate)
    print("PORT", server.server_address[1], flush=True)
    try:
        while not stopping.is_set():
            server.serve_forever(poll_interval=0.2)
            if stopping.is_set():
                break
            restarted.wait()
            restarted.clear()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cluster.loop.stopped = True
        try:
            runtime.shutdown()
        finally:
            if network is not None:
                network.teardown()
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
