#!/usr/bin/env bash
# Does the miniature loop learn? (examples/loop/README.md)
# Runs examples/loop/run.sh once per seed and reports, with forge-verify's own
# statistics:
#   - held-out pass@1 per stage and seed (untrained baseline, the SFT checkpoint
#     SFT's validation stop rule chose, each GRPO round) with its standard error
#     over tasks;
#   - RL - SFT per seed: `forge-verify compare` of the SFT stage's verdicts
#     against the last round's, paired by task, with its bootstrap interval;
#   - RL - SFT pooled over the seeds: the same compare over every seed's
#     verdicts, each task named by seed and task (a pair is one seed's task);
#   - the learning curve per seed: `forge-verify report --by policy_version`
#     over the held-out verdicts (pass@1 against the policy version served);
#   - the trainer's log-probabilities against the recorded ones (largest
#     difference over every round), and each seed's wall and CPU seconds.
# The defaults are the bench size (bench/README.md); run.sh options given
# here override them. Each seed is bounded by --seed-timeout seconds.
# --summary-only reports on the seeds already in DIR (seeds run by several
# invocations at once, each with its own --seeds and the same --out).
#
#   bench/loop_learning.sh [--seeds "1 2 3 4 5"] [--out DIR] [--seed-timeout S] [--summary-only] [run.sh options...]
#
# FORGE_BIN names the directory with the forge binaries (default: build).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
seeds="1 2 3 4 5" out=${TMPDIR:-/tmp}/forge-loop-bench seed_timeout=7200 summary_only=0
args=(--train-tasks 128 --validation-tasks 96 --heldout-tasks 144 --untrained-tasks 16 --eval-attempts 2
      --rounds 2 --round-tasks 32 --attempts 4)
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seed-timeout) seed_timeout=$2; shift 2 ;;
    --summary-only) summary_only=1; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
bin=$(cd "${FORGE_BIN:-$src/build}" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

# children_cpu: CPU seconds (user + system) of this shell's waited-for children so
# far -> $cpu_total (`times` in this shell: in a $(...) subshell it would count none).
children_cpu() {
  times >"$out/.times.$$"
  cpu_total=$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] }
                   print s }' "$out/.times.$$")
  rm -f "$out/.times.$$"
}

for seed in $seeds; do
  [ "$summary_only" = 0 ] || break
  echo "== seed $seed" >&2
  children_cpu
  wall=$(date +%s.%N) cpu=$cpu_total status=0
  FORGE_BIN=$bin timeout -k 30 "$seed_timeout" bash "$src/examples/loop/run.sh" --out "$out/seed-$seed" \
    --seed "$seed" "${args[@]}" >&2 || status=$?
  children_cpu
  wall=$(echo "$(date +%s.%N) - $wall" | bc) cpu=$(echo "$cpu_total - $cpu" | bc)
  echo "== seed $seed: exit $status, ${wall%.*} s wall, ${cpu%.*} s CPU" >&2
  jq -nc --argjson s "$seed" --argjson st "$status" --argjson w "$wall" --argjson c "$cpu" \
    '{seed: $s, status: $st, wall_seconds: $w, cpu_seconds: $c}' >"$out/seed-$seed/time.json"
done

/usr/bin/python3 - "$out" "$bin" $seeds <<'PY'
import json, math, os, subprocess, sys
out, bin_dir = sys.argv[1], sys.argv[2]
verify = os.path.join(bin_dir, "forge-verify")
seeds = []
for seed in sys.argv[3:]:
    path = os.path.join(out, "seed-%s" % seed, "time.json")
    if not os.path.exists(path):
        print("seed %s: not run (no %s)" % (seed, path))
        continue
    seeds.append(json.load(open(path)))
done = [s for s in seeds if s["status"] == 0]
for s in seeds:
    if s["status"]:
        print("seed %d: run.sh exit %d (left out; see %s/seed-%d)" % (s["seed"], s["status"], out, s["seed"]))
if not done:
    sys.exit("loop_learning: no seed finished")

def forge_json(*argv):
    return json.loads(subprocess.run([verify] + list(argv), check=True, capture_output=True, text=True).stdout)

def verdicts(seed, stage):
    return os.path.join(out, "seed-%d" % seed, "runs", "eval-%s.verdicts.jsonl" % stage)

def stderr_of(path):
    """pass@1 and its standard error over tasks (the spread of the tasks' own pass@1)."""
    tasks = [t["pass_at_k"]["1"] for t in forge_json("report", "--json", "-k", "1", path)["tasks"]]
    mean = sum(tasks) / len(tasks)
    sd = math.sqrt(sum((x - mean) ** 2 for x in tasks) / (len(tasks) - 1)) if len(tasks) > 1 else 0.0
    return mean, sd / math.sqrt(len(tasks)), len(tasks)

def interval(c):
    d = c["overall"]["pass_at_k"]["1"]
    return d["difference"], d["low"], d["high"], c["overall"]["tasks"]

runs = {s["seed"]: [json.loads(l) for l in open(os.path.join(out, "seed-%d" % s["seed"], "rounds.jsonl"))]
        for s in done}
stages = [r["stage"] for r in runs[done[0]["seed"]]]
print("held-out pass@1 (sampling at temperature 1) ± standard error over tasks")
print("%-10s" % "stage" + "".join("%16s" % ("seed %d" % s["seed"]) for s in done))
for stage in stages:
    cells = []
    for s in done:
        p, se, n = stderr_of(verdicts(s["seed"], stage))
        cells.append("%.3f±%.3f" % (p, se))
    print("%-10s" % stage + "".join("%16s" % c for c in cells))

print("\nRL - SFT, held-out pass@1: forge-verify compare (SFT stage vs last round, paired by task, 95% bootstrap)")
last = stages[-1]
pooled = {"sft": [], last: []}
for s in done:
    seed = s["seed"]
    r = {x["stage"]: x for x in runs[seed]}
    c = forge_json("compare", "--json", "-k", "1", verdicts(seed, "sft"), verdicts(seed, last))
    d, lo, hi, n = interval(c)
    worst = max((x["agreement"]["max_abs_diff"] for x in runs[seed] if x.get("agreement")), default=float("nan"))
    other = {}  # outcomes other than passed and failed in the two stages compared (valid failures all the same)
    for side in ("a", "b"):
        for outcome, count in c[side]["report"]["overall"]["outcomes"].items():
            if outcome not in ("passed", "failed"):
                other[outcome] = other.get(outcome, 0) + count
    print("seed %d: SFT %.3f (validation %.3f at step %d) -> %s %.3f: %+.3f [%+.3f, %+.3f] over %d tasks; "
          "logprob max abs diff %.1e; %.0f s wall, %.0f s CPU%s"
          % (seed, r["sft"]["heldout_pass_at_1"], r["sft"]["validation_pass_at_1"], r["sft"]["sft_steps"], last,
             r[last]["heldout_pass_at_1"], d, lo, hi, n, worst, s["wall_seconds"], s["cpu_seconds"],
             "; also " + ", ".join("%d %s" % (v, k) for k, v in sorted(other.items())) if other else ""))
    for stage in pooled:  # each task named by its seed, so that a pair is one seed's task
        with open(verdicts(seed, stage)) as f:
            for line in f:
                record = json.loads(line)
                record["task_id"] = "seed-%d/%s" % (seed, record["task"]["id"])
                pooled[stage].append(json.dumps(record))
for stage, lines in pooled.items():
    with open(os.path.join(out, "pooled-%s.verdicts.jsonl" % stage), "w") as f:
        f.write("\n".join(lines) + "\n")
c = forge_json("compare", "--json", "-k", "1", os.path.join(out, "pooled-sft.verdicts.jsonl"),
               os.path.join(out, "pooled-%s.verdicts.jsonl" % last))
d, lo, hi, n = interval(c)
print("pooled over %d seeds: %+.3f [%+.3f, %+.3f] over %d (seed, task) pairs: the interval %s 0"
      % (len(done), d, lo, hi, n, "excludes" if lo > 0 or hi < 0 else "includes"))

print("\nlearning curve: held-out pass@1 by policy version (forge-verify report --by policy_version)")
for s in done:
    seed = s["seed"]
    files = [verdicts(seed, x["stage"]) for x in runs[seed]]
    g = forge_json("report", "--json", "-k", "1", "--by", "policy_version", "--store",
                   os.path.join(out, "seed-%d" % seed, "forge.db"), *files)
    # attempts with no recorded call (the sandbox never started) have no version
    none = sum(x["overall"]["valid"] for x in g["groups"] if not x["group"].isdigit())
    print("seed %d: " % seed + "  ".join("v%s %.3f" % (x["group"], x["overall"]["pass_at_k"]["1"])
                                         for x in g["groups"] if x["group"].isdigit())
          + ("  (%d attempts without a call)" % none if none else ""))
PY
