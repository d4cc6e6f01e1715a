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
#     verdicts, each task named by seed and task (a pair is one seed's task),
#     after each round over the seeds that reached it;
#   - the learning curve per seed: `forge-verify report --by policy_version`
#     over the held-out verdicts (pass@1 against the policy version served);
#   - the trainer's log-probabilities against the recorded ones (largest
#     difference over every round), and each seed's wall and CPU seconds.
# The defaults are the bench size (bench/README.md); run.sh options given
# here override them. Each seed is bounded by --seed-timeout seconds; a seed
# stopped by it counts for the stages whose evaluation it finished.
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
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
  wall=$(printf %.1f "$(echo "$(date +%s.%N) - $wall" | bc)") cpu=$(printf %.1f "$(echo "$cpu_total - $cpu" | bc)")
  echo "== seed $seed: exit $status, ${wall%.*} s wall, ${cpu%.*} s CPU" >&2
  jq -nc --argjson s "$seed" --argjson st "$status" --argjson w "$wall" --argjson c "$cpu" \
    '{seed: $s, status: $st, wall_seconds: $w, cpu_seconds: $c}' >"$out/seed-$seed/time.json"
done

/usr/bin/python3 - "$out" "$bin" $seeds <<'PY'
import json, math, os, subprocess, sys
out, bin_dir = sys.argv[1], sys.argv[2]
verify = os.path.join(bin_dir, "forge-verify")


def forge_json(*argv):
    return json.loads(subprocess.run([verify] + list(argv), check=True, capture_output=True, text=True).stdout)


def verdicts(seed, stage):
    return os.path.join(out, "seed-%d" % seed, "runs", "eval-%s.verdicts.jsonl" % stage)


def stderr_of(path):
    """pass@1 and its standard error over tasks (the spread of the tasks' own pass@1)."""
    tasks = [t["pass_at_k"]["1"] for t in forge_json("report", "--json", "-k", "1", path)["tasks"]]
    mean = sum(tasks) / len(tasks)
    sd = math.sqrt(sum((x - mean) ** 2 for x in tasks) / (len(tasks) - 1)) if len(tasks) > 1 else 0.0
    return mean, sd / math.sqrt(len(tasks))


def compare(a, b):
    """forge-verify compare of two verdict files: (difference, low, high, tasks, other outcomes)."""
    c = forge_json("compare", "--json", "-k", "1", a, b)
    d = c["overall"]["pass_at_k"]["1"]
    other = {}  # outcomes other than passed and failed on either side (valid failures all the same)
    for side in ("a", "b"):
        for outcome, count in c[side]["report"]["overall"]["outcomes"].items():
            if outcome not in ("passed", "failed"):
                other[outcome] = other.get(outcome, 0) + count
    return d["difference"], d["low"], d["high"], c["overall"]["tasks"], other


# A seed stopped early (--seed-timeout) still counts for the stages it finished:
# rounds.jsonl gets a stage's line only once its evaluation is whole.
seeds, runs = [], {}
for seed in sys.argv[3:]:
    path = os.path.join(out, "seed-%s" % seed, "time.json")
    if not os.path.exists(path):
        print("seed %s: not run (no %s)" % (seed, path))
        continue
    s = json.load(open(path))
    rounds = os.path.join(out, "seed-%d" % s["seed"], "rounds.jsonl")
    runs[s["seed"]] = {x["stage"]: x for x in map(json.loads, open(rounds))} if os.path.exists(rounds) else {}
    if s["status"]:
        print("seed %d: run.sh exit %d after %s (see %s/seed-%d)"
              % (s["seed"], s["status"], ", ".join(runs[s["seed"]]) or "no stage", out, s["seed"]))
    if "sft" in runs[s["seed"]]:
        seeds.append(s)
if not seeds:
    sys.exit("loop_learning: no seed reached its SFT evaluation")
stages = max((list(runs[s["seed"]]) for s in seeds), key=len)
rounds = [x for x in stages if x.startswith("round-")]

print("held-out pass@1 (sampling at temperature 1) ± standard error over tasks")
print("%-10s" % "stage" + "".join("%16s" % ("seed %d" % s["seed"]) for s in seeds))
for stage in stages:
    cells = ["%.3f±%.3f" % stderr_of(verdicts(s["seed"], stage)) if stage in runs[s["seed"]] else "-" for s in seeds]
    print("%-10s" % stage + "".join("%16s" % c for c in cells))

print("\nRL - SFT, held-out pass@1: forge-verify compare (SFT stage vs each seed's last round, paired by task, "
      "95% bootstrap)")
for s in seeds:
    seed, r = s["seed"], runs[s["seed"]]
    mine = [x for x in rounds if x in r]
    line = "seed %d: SFT %.3f (validation %.3f at step %d)" % (seed, r["sft"]["heldout_pass_at_1"],
                                                             r["sft"]["validation_pass_at_1"], r["sft"]["sft_steps"])
    if mine:
        d, lo, hi, n, other = compare(verdicts(seed, "sft"), verdicts(seed, mine[-1]))
        worst = max((r[x]["agreement"]["max_abs_diff"] for x in mine if r[x].get("agreement")), default=float("nan"))
        line += " -> %s %.3f: %+.3f [%+.3f, %+.3f] over %d tasks; logprob max abs diff %.1e" % (
            mine[-1], r[mine[-1]]["heldout_pass_at_1"], d, lo, hi, n, worst)
        if other:
            line += "; also " + ", ".join("%d %s" % (v, k) for k, v in sorted(other.items()))
    print(line + "; %.0f s wall, %.0f s CPU%s" % (s["wall_seconds"], s["cpu_seconds"],
                                                  " (stopped early)" if s["status"] else ""))

# Pooled: every seed's verdicts of a stage in one file, each task named by its
# seed (a pair is one seed's task), for each round the seeds that reached it.
def pool(stage, members):
    path = os.path.join(out, "pooled-%s.verdicts.jsonl" % stage)
    with open(path, "w") as f:
        for s in members:
            for line in open(verdicts(s["seed"], stage)):
                record = json.loads(line)
                # compare pairs by task id and folds records by rollout id, which run.sh's
                # run ids make the same in every seed: both named by the seed
                name = "seed-%d/%s" % (s["seed"], record["task"]["id"])
                record["task_id"], record["task"]["id"] = name, name
                record["rollout_id"] = "seed-%d/%s" % (s["seed"], record["rollout_id"])
                f.write(json.dumps(record) + "\n")
    return path

for stage in rounds:
    members = [s for s in seeds if stage in runs[s["seed"]]]
    d, lo, hi, n, _ = compare(pool("sft", members), pool(stage, members))
    print("%s - SFT pooled over %d seeds (%s): %+.3f [%+.3f, %+.3f] over %d (seed, task) pairs: the interval %s 0"
          % (stage, len(members), ", ".join(str(s["seed"]) for s in members), d, lo, hi, n,
             "excludes" if lo > 0 or hi < 0 else "includes"))

print("\nlearning curve: held-out pass@1 by policy version (forge-verify report --by policy_version)")
for s in seeds:
    seed = s["seed"]
    files = [verdicts(seed, x) for x in runs[seed]]
    g = forge_json("report", "--json", "-k", "1", "--by", "policy_version", "--store",
                   os.path.join(out, "seed-%d" % seed, "forge.db"), *files)
    # attempts with no recorded call (the sandbox never started) have no version
    none = sum(x["overall"]["valid"] for x in g["groups"] if not x["group"].isdigit())
    print("seed %d: " % seed + "  ".join("v%s %.3f" % (x["group"], x["overall"]["pass_at_k"]["1"])
                                         for x in g["groups"] if x["group"].isdigit())
          + ("  (%d attempts without a call)" % none if none else ""))
PY
