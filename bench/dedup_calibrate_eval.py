#!/usr/bin/env python3
"""Scores forge-dedup's similar pairs against the calibration sets' truth.

  dedup_calibrate_eval.py --set ROWS.jsonl... NAME=PAIRS.jsonl[,PAIRS.jsonl]... \
      [--at NAME=THRESHOLD ...]

A pair is a duplicate when both texts are in the same cluster (a base and its
0-10 % variants); a pair with a 20 or 30 % variant is in the grey zone and
counts neither way; every other pair found (a 50 % rewrite, an unrelated
text) is a false one. Recall at an edit rate: the share of base-variant pairs
scoring >= t; precision: the share of the pairs scoring >= t outside the grey
zone that are duplicates (a pair counts for a set or cell when either text is
in it).

A threshold meets the targets when, on the chosen sets, recall at every rate
<= 10 % is >= 0.97 and precision >= 0.99. For each configuration: the
thresholds that do, the middle of the widest run of them (the rule's choice,
as far from the recall limit as from the precision one), and the figures
there on the chosen and the kept-aside (held) sets. With --at: the table at
that threshold by source, length, and source and length, chosen and held side
by side.
"""
import argparse
import bisect
import collections
import json

RATES = (0.0, 0.02, 0.05, 0.10)
RECALL, PRECISION = 0.97, 0.99
SPLITS = ("chosen", "held")


def load_rows(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                r.pop("text", None)
                rows[r["id"]] = r
    return rows


def load_pairs(spec):
    pairs = []
    for path in spec.split(","):
        with open(path) as f:
            pairs += [(p["a"], p["b"], p["score"]) for p in map(json.loads, f)]
    return pairs


class Scores:
    """Sorted scores of one configuration over a selection of rows, so that
    recall and precision at any threshold are two binary searches."""

    def __init__(self, rows, pairs, select):
        best = {}  # variant id -> its score with its own base
        true, false = [], []
        for a, b, s in pairs:
            ra, rb = rows[a], rows[b]
            if not (select(ra) or select(rb)):
                continue
            if ra["base"] == rb["base"] and (ra["rate"] is None or rb["rate"] is None):
                best[(rb if ra["rate"] is None else ra)["id"]] = s
            if ra["cluster"][0] == "g" or rb["cluster"][0] == "g":
                continue
            (true if ra["cluster"] == rb["cluster"] else false).append(s)
        self.true, self.false = sorted(true), sorted(false)
        self.variants = collections.defaultdict(list)
        for r in rows.values():
            if r["rate"] is not None and select(r):
                self.variants[r["rate"]].append(best.get(r["id"], 0.0))
        for v in self.variants.values():
            v.sort()

    @staticmethod
    def at_least(sorted_scores, t):
        return len(sorted_scores) - bisect.bisect_left(sorted_scores, t - 1e-6)

    def recall(self, rate, t):
        v = self.variants.get(rate)
        return self.at_least(v, t) / len(v) if v else float("nan")

    def false_pairs(self, t):
        return self.at_least(self.false, t)

    def precision(self, t):
        tp, fp = self.at_least(self.true, t), self.false_pairs(t)
        return tp / (tp + fp) if tp + fp else 1.0

    def meets(self, t):
        return min(self.recall(r, t) for r in RATES) >= RECALL and self.precision(t) >= PRECISION

    def bases(self):
        return len(self.variants.get(0.0, []))


def choose(scores, lowest):
    """Thresholds meeting the targets (lowest-0.99), and the middle of the widest run."""
    ok = [k / 100 for k in range(round(lowest * 100), 100) if scores.meets(k / 100)]
    runs, run = [], []
    for t in ok:
        if run and round(t - run[-1], 2) > 0.01:
            runs.append(run)
            run = []
        run.append(t)
    if run:
        runs.append(run)
    widest = max(runs, key=len) if runs else []
    return ok, (widest[(len(widest) - 1) // 2] if widest else None)


def spans(ok):
    if not ok:
        return "none"
    out, start = [], ok[0]
    for prev, t in zip(ok, ok[1:] + [None]):
        if t is None or round(t - prev, 2) > 0.01:
            out.append(f"{start:.2f}-{prev:.2f}" if prev != start else f"{start:.2f}")
            start = t
    return ", ".join(out)


def figures(s, t):
    return ("/".join(f"{s.recall(r, t):.3f}" for r in RATES) +
            f", {s.precision(t):.4f}")


def table(rows, pairs, t):
    head = " | ".join(f"{r:.0%}" for r in RATES)
    print(f"| texts | bases | {head} | precision (false pairs) | bases | {head} | precision (false pairs) |")
    print("|---|" + "---|" * 12)
    sources = sorted({r["source"] for r in rows.values()}, key=lambda s: "doc license man code comment traj".find(s))
    lengths = [l for l in ("short", "medium", "long", "xlong") if any(r["length"] == l for r in rows.values())]
    cells = [("all", lambda r: True)]
    cells += [(s, lambda r, s=s: r["source"] == s) for s in sources]
    cells += [(l, lambda r, l=l: r["length"] == l) for l in lengths]
    cells += [(f"{s} {l}", lambda r, s=s, l=l: r["source"] == s and r["length"] == l)
              for s in sources for l in lengths]
    for label, cell in cells:
        out = []
        for split in SPLITS:
            sc = Scores(rows, pairs, lambda r, c=cell, sp=split: r["split"] == sp and c(r))
            if not sc.bases():
                out.append("0 | " + " | ".join("" for _ in RATES) + " | ")
                continue
            out.append(f"{sc.bases()} | " + " | ".join(f"{sc.recall(r, t):.3f}" for r in RATES) +
                       f" | {sc.precision(t):.4f} ({sc.false_pairs(t)})")
        if any(not o.startswith("0 |") for o in out):
            print(f"| {label} | {out[0]} | {out[1]} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", required=True, help="rows of the sets (JSONL)")
    ap.add_argument("runs", nargs="+", help="NAME=PAIRS.jsonl[,PAIRS.jsonl]")
    ap.add_argument("--at", action="append", default=[], help="NAME=THRESHOLD: the full table")
    ap.add_argument("--lowest", type=float, default=0.5,
                    help="the lowest threshold the pairs were searched at (lower ones are not tried)")
    args = ap.parse_args()
    rows = load_rows(args.set)
    loaded = {}
    print(f"| configuration | thresholds meeting the targets on the chosen sets | rule's choice "
          f"| chosen: recall at {'/'.join(f'{r:.0%}' for r in RATES)}, precision | held: the same |")
    print("|---|---|---|---|---|")
    for spec in args.runs:
        name, path = spec.split("=", 1)
        pairs = loaded[name] = load_pairs(path)
        split = {sp: Scores(rows, pairs, lambda r, sp=sp: r["split"] == sp) for sp in SPLITS}
        ok, t = choose(split["chosen"], args.lowest)
        at = (f"{t:.2f} | {figures(split['chosen'], t)} | {figures(split['held'], t)}"
              if t is not None else "— | | ")
        print(f"| {name} | {spans(ok)} | {at} |")
    for spec in args.at:
        name, t = spec.split("=")
        print(f"\n{name} at threshold {float(t):.2f}, chosen sets | kept-aside (held) sets:\n")
        table(rows, loaded[name], float(t))


if __name__ == "__main__":
    main()
