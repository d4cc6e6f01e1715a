#!/usr/bin/env python3
"""Two generated runs of 2,000 tasks for forge-verify's pages at training
scale: scale_runs.py OUT_DIR writes OUT_DIR/a.jsonl and OUT_DIR/b.jsonl,
8 verdicts per task (7 for every 50th task; every 100th has an infra_error
and every 250th a tampered verdict in B), pass rates spread over [0, 1] and
B better on two tasks in three. Deterministic."""
import json
import os
import random
import sys

out = sys.argv[1]
rng = random.Random(58)
for run, shift in (("a", 0.0), ("b", 0.08)):
    with open(os.path.join(out, run + ".jsonl"), "w") as f:
        for t in range(2000):
            p = min(1.0, max(0.0, (t * 7919 % 1000) / 1000 + shift * (1 if t % 3 else -1)))
            for i in range(7 if t % 50 == 0 else 8):
                outcome = "passed" if rng.random() < p else "failed"
                if i == 0 and t % 100 == 1:
                    outcome = "infra_error"
                if i == 1 and run == "b" and t % 250 == 2:
                    outcome = "tampered"
                f.write(json.dumps({"rollout_id": "%s-%d-%d" % (run, t, i), "task_id": "task-%04d" % t,
                                    "harness": "h", "verdict": {"outcome": outcome, "reward": float(outcome != "failed"),
                                                                "threshold": 1}}) + "\n")
