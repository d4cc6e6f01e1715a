#!/usr/bin/env bash
# forge-launch --backend k8s, pod-native rollouts (--k8s-box-image), against
# the fake API server's scale mode (tests/fakes/k8s_api_server.py, a test
# double on 127.0.0.1 whose pods are not processes but take configured
# scheduling, pull, start and run times). Each run: a baseline forge-launch
# at -j 8 over 96 rollouts, then ROLLOUTS rollouts at -j IN_FLIGHT with
# --k8s-qps QPS, while the fake sends a 429 storm with Retry-After, ends the
# watch with 410 Expired, evicts running pods and restarts (connections
# dropped, port closed, state kept). Prints per run and as ranges over RUNS:
#   requests per rollout by kind (create, exec, log, delete; list and watch
#     are the run's, shared), and all of them
#   forge-launch's RSS per rollout in flight: (peak RSS at IN_FLIGHT - peak
#     RSS at -j 8) / (IN_FLIGHT - 8); CPU per rollout
#   pod creations per second, sustained (the middle 80 % of creations), and
#     all requests per second against QPS; forge-launch's threads at peak
#   rollouts lost (no record, or not ok) and rollouts counted as attempts
#     beyond their first (attempt != 0); infrastructure retries
#
#   bench/k8s_scale.sh [ROLLOUTS=10000] [IN_FLIGHT=256] [QPS=200] [RUNS=3]
# FORGE_BIN (default build) holds forge-launch and forge-box. Bounded: every
# run ends when its rollouts do (a 30-minute cap each); 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
export FORGE_BIN="${FORGE_BIN:-build}" FORGE_SRC="$PWD"
exec python3 - "${1:-10000}" "${2:-256}" "${3:-200}" "${4:-3}" <<'PY'
import json, os, subprocess, sys, tempfile, threading, time, urllib.request

N, J, QPS, RUNS = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
BIN, SRC = os.environ["FORGE_BIN"], os.environ["FORGE_SRC"]
BASE_N, BASE_J = 96, 8
CONFIG = {"schedule_latency": {"mean": 0.05, "jitter": 0.03}, "sandbox_latency": {"mean": 0.3, "jitter": 0.1},
          "pull_latency": 2.0, "start_latency": {"mean": 0.3, "jitter": 0.1}, "init_run_seconds": 0.1,
          "run_seconds": {"mean": 3.0, "jitter": 1.0}, "kill_latency": 0.1, "bookmark_interval": 5.0}


def progress(text):
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K" + text)
        sys.stderr.flush()


class Fake:
    def __init__(self, work):
        self.token = "bench-%d" % os.getpid()
        self.proc = subprocess.Popen(
            [sys.executable, SRC + "/tests/fakes/k8s_api_server.py", "--mode", "scale", "--token", self.token,
             "--namespace", "forge-bench", "--nodes", "8", "--node-pods", "110", "--node-cpu", "4000",
             "--node-memory", "2000Gi"], stdout=subprocess.PIPE, stderr=open(work + "/fake.err", "w"), text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            sys.exit("the fake API server did not start: " + open(work + "/fake.err").read())
        self.url = "http://127.0.0.1:" + line.split()[1]
        self.control("config", CONFIG)

    def control(self, what, body=None):
        data = json.dumps(body).encode() if body is not None else None
        with urllib.request.urlopen(urllib.request.Request(self.url + "/_fake/" + what, data=data), timeout=60) as r:
            return json.load(r)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def tasks(work, n):
    path = "%s/tasks-%d.jsonl" % (work, n)
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": "t%05d" % i, "instruction": "x"}) + "\n")
    return path


def launch(fake, work, box, n, j, faults):
    out = "%s/out-%d.jsonl" % (work, j)
    argv = [BIN + "/forge-launch", "--backend", "k8s", "--k8s-server", fake.url, "--k8s-token", fake.token,
            "--k8s-namespace", "forge-bench", "--k8s-qps", str(QPS), "--k8s-burst", str(int(QPS)),
            "--k8s-box-image", box, "--k8s-apply-network-policies", "--image", "forge-busybox:latest", "--command", "true", "-j", str(j),
            "--store", "%s/store-%d.db" % (work, j), "--run-id", "bench-%d-%d" % (j, time.time_ns() % 10**9),
            "--retry-backoff", "0.2", "--infra-retries", "5", tasks(work, n)]
    before = len(fake.control("stats")["log"])
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=open(out, "w"), stderr=open(work + "/launch-%d.err" % j, "w"))
    proc.finished = threading.Event()
    injector = threading.Thread(target=faults, args=(fake, proc), daemon=True) if faults else None
    if injector:
        injector.start()
    # Peak RSS from /proc (VmHWM of forge-launch's own memory): wait4's
    # ru_maxrss would carry this Python parent's size across the fork.
    peak, threads, done = [0], [0], threading.Event()

    def sample():
        while not done.is_set():
            try:
                for line in open("/proc/%d/status" % proc.pid):
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
                    elif line.startswith("Threads:"):
                        threads[0] = max(threads[0], int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    proc.finished.set()
    proc.returncode = status
    seconds = time.monotonic() - start
    records = [json.loads(l) for l in open(out) if l.strip()]
    log = fake.control("stats")["log"][before:]
    return {"seconds": seconds, "rss_kib": peak[0], "threads": threads[0], "cpu": usage.ru_utime + usage.ru_stime,
            "records": records, "log": log, "exit": status}


def storms(fake, proc):
    """Time-based faults, each once, while the launcher runs."""
    expected = N * 3 / QPS
    steps = [(0.15, "429 storm", lambda: fake.control("config", {"throttle": 300, "retry_after": 1})),
             (0.30, "watch 410", lambda: fake.control("expire", {})),
             (0.45, "evictions", lambda: fake.control("evict", {"namespace": "forge-bench", "count": 20,
                                                                  "mode": "fail"})),
             (0.60, "restart", lambda: fake.control("restart", {"downtime": 2.0})),
             (0.75, "429 storm", lambda: fake.control("config", {"throttle": 300, "retry_after": 2}))]
    start = time.monotonic()
    for at, name, act in steps:
        while time.monotonic() - start < at * expected:
            if proc.finished.is_set():
                return
            time.sleep(0.2)
        try:
            act()
            progress("%s at %.0f s" % (name, time.monotonic() - start))
        except OSError as e:
            print("fault %s: %s" % (name, e), file=sys.stderr)


def figures(run, n):
    kinds = {}
    for t, method, label, code in run["log"]:
        key = label if code < 400 else "rejected %d" % code
        kinds[key] = kinds.get(key, 0) + 1
    creates = sorted(t for t, method, label, code in run["log"] if label == "create" and code in (200, 201))
    if len(creates) < 10:
        sys.exit("forge-launch made %d pods (exit %d)" % (len(creates), run["exit"]))
    lo, hi = creates[len(creates) // 10], creates[len(creates) * 9 // 10]
    sustained = (len(creates) * 8 // 10) / (hi - lo) if hi > lo else 0
    times = sorted(e[0] for e in run["log"])
    ok = sum(1 for r in run["records"] if r.get("outcome") == "ok" and r.get("exit_code") == 0)
    return {"kinds": {k: v / n for k, v in sorted(kinds.items())}, "per_rollout": len(run["log"]) / n,
            "creates_per_s": sustained, "requests_per_s": len(times) / (times[-1] - times[0]),
            "lost": n - ok, "beyond_first_attempt": sum(1 for r in run["records"] if r.get("attempt", 0) != 0),
            "infra_retries": sum(r.get("infra_retries", 0) for r in run["records"]),
            "throttled": sum(1 for e in run["log"] if e[3] == 429), "gone": 0}


def main():
    work = tempfile.mkdtemp(prefix="forge-k8s-scale.")
    print("work directory (launch.err, fake.err, records): " + work, file=sys.stderr)
    box = subprocess.run(["bash", SRC + "/scripts/make-box-image.sh", BIN + "/forge-box", "forge-box-bench"],
                         capture_output=True, text=True)
    box = box.stdout.strip() or "forge-box-bench:sim"  # the scale mode pulls nothing
    rows = []
    for i in range(RUNS):
        fake = Fake(work)
        try:
            base = launch(fake, work, box, BASE_N, BASE_J, None)
            main = launch(fake, work, box, N, J, storms)
        finally:
            fake.stop()
        f = figures(main, N)
        f["rss_per_inflight_kib"] = (main["rss_kib"] - base["rss_kib"]) / (J - BASE_J)
        f["rss_kib"], f["base_rss_kib"] = main["rss_kib"], base["rss_kib"]
        f["cpu_ms_per_rollout"] = 1000 * main["cpu"] / N
        f["base_cpu_ms_per_rollout"] = 1000 * base["cpu"] / BASE_N
        f["seconds"] = main["seconds"]
        f["threads_peak"], f["base_threads_peak"] = main["threads"], base["threads"]
        f["records"] = len(main["records"])
        progress("")
        print(json.dumps({"run": i + 1, **f}), flush=True)
        rows.append(f)

    def span(key, fmt="%.2f"):
        vals = [r[key] for r in rows]
        return (fmt + "–" + fmt) % (min(vals), max(vals))
    print("\n%d runs of %d rollouts at -j %d, --k8s-qps %g:" % (RUNS, N, J, QPS))
    for kind in sorted({k for r in rows for k in r["kinds"]}):
        vals = [r["kinds"].get(kind, 0) for r in rows]
        print("  requests per rollout, %-8s %.4f–%.4f" % (kind, min(vals), max(vals)))
    print("  requests per rollout, all      " + span("per_rollout", "%.3f"))
    print("  RSS per rollout in flight KiB  " + span("rss_per_inflight_kib", "%.1f") +
          "  (peak %s KiB vs %s at -j %d)" % (span("rss_kib", "%d"), span("base_rss_kib", "%d"), BASE_J))
    print("  threads at peak                " + span("threads_peak", "%d") + "  (baseline " +
          span("base_threads_peak", "%d") + " at -j %d)" % BASE_J)
    print("  CPU ms per rollout             " + span("cpu_ms_per_rollout") + "  (baseline " +
          span("base_cpu_ms_per_rollout") + ")")
    print("  pod creations/s (sustained)    " + span("creates_per_s", "%.1f") + "  against QPS %g (%.1f creations/s at 3 requests each)" % (QPS, QPS / 3))
    print("  requests/s                     " + span("requests_per_s", "%.1f"))
    print("  429s answered                  " + span("throttled", "%d"))
    print("  rollouts lost                  " + span("lost", "%d"))
    print("  counted as a further attempt   " + span("beyond_first_attempt", "%d"))
    print("  infrastructure retries         " + span("infra_retries", "%d"))
    print("  seconds                        " + span("seconds", "%.0f"))


main()
PY
