#!/usr/bin/env python3
"""The frequentist coverage of compare's per-task interval of B - A in pass@1,
by exact enumeration: for n trials a run, one task for every pair of pass
counts (c_A, c_B) in two generated runs, one `forge-verify compare`, and for
true rates p_A, p_B on a grid (0.05 .. 0.95 by 0.05) the probability, summed
over every outcome, that the interval printed for it holds p_B - p_A.

  coverage.py FORGE_VERIFY N WORK_DIR
prints {"n": N, "mean": ..., "min": ...} (mean and least over the grid).
"""
import json
import math
import os
import subprocess
import sys


def coverage(binary, n, work):
    a_path, b_path = os.path.join(work, "cov-a.jsonl"), os.path.join(work, "cov-b.jsonl")
    with open(a_path, "w") as fa, open(b_path, "w") as fb:
        for ca in range(n + 1):
            for cb in range(n + 1):
                task = "c%d-%d" % (ca, cb)
                for i in range(n):
                    for f, run, c in ((fa, "a", ca), (fb, "b", cb)):
                        f.write(json.dumps({"rollout_id": "%s-%s-%d" % (run, task, i), "task_id": task,
                                            "verdict": {"outcome": "passed" if i < c else "failed"}}) + "\n")
    out = subprocess.run([binary, "compare", "--json", "--resamples", "2000", a_path, b_path],
                         capture_output=True, text=True, check=True).stdout
    intervals = {}
    for t in json.loads(out)["tasks"]:
        ca, cb = map(int, t["task_id"][1:].split("-"))
        d = t["pass_at_k"]["1"]
        intervals[(ca, cb)] = (d["low"], d["high"])
    assert len(intervals) == (n + 1) ** 2
    binom = lambda c, p: math.comb(n, c) * p ** c * (1 - p) ** (n - c)
    grid = [i / 20 for i in range(1, 20)]
    covered = [sum(binom(ca, pa) * binom(cb, pb) for (ca, cb), (lo, hi) in intervals.items()
                   if lo - 1e-12 <= pb - pa <= hi + 1e-12)
               for pa in grid for pb in grid]
    return {"n": n, "mean": sum(covered) / len(covered), "min": min(covered)}


if __name__ == "__main__":
    print(json.dumps(coverage(sys.argv[1], int(sys.argv[2]), sys.argv[3])))
