#!/usr/bin/env bash
# The miniature loop's policy server (examples/loop/policy_server.py): CPU
# seconds per completion token, this tree's server (continuous batching over a
# KV cache, freed memory kept) against a baseline commit's (one request at a
# time, a full forward per sampled token), and the baseline with only glibc's
# freed-memory setting changed (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_:
# what policy.keep_freed_memory does), interleaved, --runs times.
#
# The load is the untrained evaluation's: conversations of the harness's system
# prompt, a task and up to 6 turns of random printable text with an error
# message (prompts of about 230 to 660 tokens), 32 new tokens each at
# temperature 1, --clients requests at once
# (forge-launch -j 4 in run.sh), the same requests for every server. The
# figure is the server process's user + system CPU seconds over the requests
# (read from /proc), and the wall seconds, each against the last server of
# --servers (default "head base+malloc base": against the baseline as it is;
# "head base+malloc" leaves out the slowest, the baseline without the setting).
#
#   bench/loop_server.sh [--base COMMIT] [--runs 3] [--requests 24] [--clients 4] [--servers LIST]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
base=main runs=3 requests=24 clients=4 servers="head base+malloc base"
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "loop_server: unknown argument $1" >&2; exit 64 ;;
  esac
done
py=/usr/bin/python3
"$py" -c 'import torch' 2>/dev/null || { echo "loop_server: $py lacks torch" >&2; exit 69; }
work=$(mktemp -d /tmp/forge-loop-server-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/base"
for f in policy.py policy_server.py; do
  git -C "$src" show "$base:examples/loop/$f" >"$work/base/$f"
done
"$py" "$src/examples/loop/trainer.py" init --seed 1 --out "$work/w.safetensors" >/dev/null

PY=$py WORK=$work HEAD_DIR=$src/examples/loop REQUESTS=$requests CLIENTS=$clients RUNS=$runs BASE=$base SERVERS=$servers "$py" - <<'PY'
import concurrent.futures as cf
import http.client
import json
import os
import random
import subprocess
import time

work, requests, clients = os.environ["WORK"], int(os.environ["REQUESTS"]), int(os.environ["CLIENTS"])
rng = random.Random(7)
printable = "".join(chr(c) for c in range(32, 127))
bodies = []
for i in range(requests):
    messages = [{"role": "system", "content": "You are an agent in a Linux shell. Reply with exactly one shell "
                 "command and nothing else. Its output comes back to you. When the task is complete, reply DONE."},
                {"role": "user", "content": "Write the number %d into the file out.txt.\n" % rng.randrange(1000, 10000)}]
    for _ in range(rng.randrange(0, 7)):  # each turn: 32 bytes of answer, its error message
        messages.append({"role": "assistant", "content": "".join(rng.choice(printable) for _ in range(32))})
        messages.append({"role": "user", "content": "sh: 1: not found\n[exit status 127]"})
    bodies.append({"messages": messages, "max_tokens": 32, "temperature": 1.0, "return_token_ids": True,
                   "logprobs": True, "top_logprobs": 0})


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(name, directory, env):
    port_file = os.path.join(work, name + ".port")
    if os.path.exists(port_file):
        os.remove(port_file)
    proc = subprocess.Popen([os.environ["PY"], os.path.join(directory, "policy_server.py"), "--port-file", port_file,
                             "--weights", os.path.join(work, "w.safetensors"), "--seed", "1"],
                            env=dict(os.environ, **env), stderr=subprocess.DEVNULL)
    while not os.path.exists(port_file):
        time.sleep(0.1)
    port = int(open(port_file).read())

    def call(body):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        data = json.loads(r.read())
        c.close()
        if r.status != 200:
            raise SystemExit("loop_server: %s answered %d: %s" % (name, r.status, data))
        return len(data["choices"][0]["token_ids"])

    call(bodies[0])  # warm
    cpu, wall = cpu_seconds(proc.pid), time.time()
    with cf.ThreadPoolExecutor(clients) as pool:
        tokens = sum(pool.map(call, bodies))
    cpu, wall = cpu_seconds(proc.pid) - cpu, time.time() - wall
    proc.terminate()
    proc.wait()
    return cpu, wall, tokens


known = {"head": (os.environ["HEAD_DIR"], {}),
         "base+malloc": (os.path.join(work, "base"),
                         {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}),
         "base": (os.path.join(work, "base"), {})}
names = os.environ["SERVERS"].split()
if len(names) < 2 or any(n not in known for n in names):
    raise SystemExit("loop_server: --servers %r: two or more of %s" % (os.environ["SERVERS"], ", ".join(known)))
servers = [(n,) + known[n] for n in names]
results = {name: [] for name, _, _ in servers}
for run in range(int(os.environ["RUNS"])):
    for name, directory, env in servers:
        cpu, wall, tokens = serve(name, directory, env)
        results[name].append((cpu, wall, tokens))
        print("run %d %-12s %6.1f s CPU %6.1f s wall %5d tokens: %.2f ms CPU a token"
              % (run + 1, name, cpu, wall, tokens, 1000 * cpu / tokens), flush=True)
baseline = names[-1]
print("\nper completion token, against %s (%s's server) in the same run (range over %s runs):"
      % (baseline, os.environ["BASE"], os.environ["RUNS"]))
for name in names[:-1]:
    cpu = [(r[0] / r[2]) / (b[0] / b[2]) for r, b in zip(results[name], results[baseline])]
    wall = [(r[1] / r[2]) / (b[1] / b[2]) for r, b in zip(results[name], results[baseline])]
    print("%-12s CPU %.3f-%.3fx, wall %.3f-%.3fx" % (name, min(cpu), max(cpu), min(wall), max(wall)))
PY
