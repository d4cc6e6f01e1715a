#!/usr/bin/env python3
"""Scores forge-dedup's similar pairs against the calibration set's truth.

  dedup_calibrate_eval.py SET.jsonl NAME=PAIRS.jsonl... [--at NAME=THRESHOLD ...]

A pair is a duplicate when both texts are in the same cluster (a base and its
0-10 % variants); a pair with a 20 or 30 % variant is in the grey zone and
counts neither way; every other pair found (a 50 % rewrite, an unrelated
text) is a false positive. For each configuration and threshold t: recall at each
edit rate (the share of base-variant pairs scoring >= t) and precision (the
share of pairs scoring >= t that are duplicates). A threshold is feasible when
every rate's recall is >= 0.95 and precision >= 0.99. Prints, per
configuration, the feasible range; with --at, the table at that threshold by
source and length.
"""
import argparse
import collections
import json


def load_set(path):
    items = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            items[r["id"]] = r
    return items


def load_pairs(path):
    with open(path) as f:
        return [(p["a"], p["b"], p["score"]) for p in map(json.loads, f)]


def score_table(items, pairs):
    """Per base-variant pair: its score (0 when not found); found pairs."""
    base_pair = {}
    for a, b, s in pairs:
        ra, rb = items[a], items[b]
        if ra["base"] == rb["base"] and (ra["rate"] is None or rb["rate"] is None):
            variant = rb if ra["rate"] is None else ra
            base_pair[variant["id"]] = s
    return base_pair


def metrics(items, pairs, base_pair, t, select=lambda r: True):
    rates = collections.defaultdict(lambda: [0, 0])
    for r in items.values():
        if r["rate"] is None or not select(r):
            continue
        cell = rates[r["rate"]]
        cell[1] += 1
        cell[0] += base_pair.get(r["id"], 0.0) >= t
    tp = fp = 0
    for a, b, s in pairs:
        if s < t or not (select(items[a]) or select(items[b])):
            continue
        if items[a]["cluster"][0] == "g" or items[b]["cluster"][0] == "g":
            continue  # the grey zone counts neither way
        if items[a]["cluster"] == items[b]["cluster"]:
            tp += 1
        else:
            fp += 1
    precision = tp / (tp + fp) if tp + fp else 1.0
    return {rate: hit / n for rate, (hit, n) in rates.items()}, precision, fp


def feasible(items, pairs, base_pair):
    ok = []
    for k in range(30, 100):
        t = k / 100
        recall, precision, _ = metrics(items, pairs, base_pair, t)
        worst = min(v for rate, v in recall.items() if rate <= 0.10)
        if worst >= 0.95 and precision >= 0.99:
            ok.append(t)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("set")
    ap.add_argument("runs", nargs="+", help="NAME=PAIRS.jsonl")
    ap.add_argument("--at", action="append", default=[], help="NAME=THRESHOLD: full table")
    args = ap.parse_args()
    items = load_set(args.set)
    runs = dict(r.split("=", 1) for r in args.runs)
    print("| configuration | feasible thresholds (recall >= 0.95 at every rate <= 10 %, precision >= 0.99) |")
    print("|---|---|")
    loaded = {}
    for name, path in runs.items():
        pairs = load_pairs(path)
        base_pair = score_table(items, pairs)
        loaded[name] = (pairs, base_pair)
        ok = feasible(items, pairs, base_pair)
        span = f"{ok[0]:.2f}-{ok[-1]:.2f}" if ok else "none"
        print(f"| {name} | {span} |")
    for spec in args.at:
        name, t = spec.split("=")
        t = float(t)
        pairs, base_pair = loaded[name]
        print(f"\n{name} at threshold {t:.2f}:\n")
        print("| texts | 0 % | 2 % | 5 % | 10 % | 20 % | 30 % | 50 % (not duplicates) | precision | false pairs |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        cells = [("all", lambda r: True)]
        for source in ("doc", "man", "code", "traj"):
            cells.append((source, lambda r, s=source: r["source"] == s))
        for length in ("short", "medium", "long"):
            cells.append((length, lambda r, l=length: r["length"] == l))
        for label, select in cells:
            recall, precision, fp = metrics(items, pairs, base_pair, t, select)
            row = " | ".join(f"{recall.get(rate, float('nan')):.3f}"
                             for rate in (0.0, 0.02, 0.05, 0.10, 0.20, 0.30, 0.50))
            print(f"| {label} | {row} | {precision:.4f} | {fp} |")


if __name__ == "__main__":
    main()
