#!/usr/bin/env python3
"""Scores forge-dedup's similar pairs against the calibration sets' truth.

  dedup_calibrate_eval.py --set ROWS.jsonl... NAME=PAIRS.jsonl[,PAIRS.jsonl...]... \
      [--at NAME=THRESHOLD ...] [--lowest 0.5]

The rows may come from several seeds (bench/dedup_calibration_set.py --seed:
other files, other edits, the same split by package); each seed's pairs come
from its own forge-dedup run. A pair is a duplicate when both texts are in the
same cluster (a base and its 0-10 % variants); a pair with a 20 or 30 %
variant is in the grey zone and counts neither way; every other pair found (a
50 % rewrite, an unrelated text) is a false one. Recall at an edit rate: the
share of base-variant pairs scoring >= t; precision: the share of the pairs
scoring >= t outside the grey zone that are duplicates (a pair counts for a
set or cell when either text is in it).

A threshold meets the targets when, on the chosen sets of a seed, recall at
every rate <= 10 % is >= 0.97 and precision >= 0.99. For each configuration:
the thresholds that do in each seed, the middle of the widest run of those
that do in every seed (the rule's choice: as far from the recall limit as
from the precision one), and the figures there on the chosen and the
kept-aside (held) sets, all seeds together, with the range over the seeds.
With --at: the table at that threshold by seed, source, length, and source
and length, chosen and held side by side.
"""
import argparse
import bisect
import collections
import json

RATES = (0.0, 0.02, 0.05, 0.10)
RECALL, PRECISION = 0.97, 0.99
SPLITS = ("chosen", "held")
SOURCES = ("doc", "license", "man", "code", "comment", "traj")
LENGTHS = ("short", "medium", "long", "xlong")


def key(row):
    """The cell a text is in: seed, set, source, length."""
    return row["seed"], row["split"], row["source"], row["length"]


def load_rows(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                r.pop("text", None)
                rows[r["id"]] = r
    return rows


class Pairs:
    """One configuration's pairs, each classified once and filed under the
    cells of its two texts."""

    def __init__(self, rows, spec):
        self.rows = rows
        self.scores = []  # (score, "true" | "false" | "grey", base-variant id or None)
        self.by_cell = collections.defaultdict(list)
        for path in spec.split(","):
            with open(path) as f:
                for p in map(json.loads, f):
                    self.add(rows[p["a"]], rows[p["b"]], p["score"])
        self.variants = collections.defaultdict(list)  # cell -> rows with a rate
        for r in rows.values():
            if r["rate"] is not None:
                self.variants[key(r)].append(r)

    def add(self, ra, rb, score):
        if ra["cluster"][0] == "g" or rb["cluster"][0] == "g":
            kind = "grey"
        else:
            kind = "true" if ra["cluster"] == rb["cluster"] else "false"
        variant = None
        if ra["base"] == rb["base"] and (ra["rate"] is None or rb["rate"] is None):
            variant = (rb if ra["rate"] is None else ra)["id"]
        self.scores.append((score, kind, variant))
        for cell in {key(ra), key(rb)}:
            self.by_cell[cell].append(len(self.scores) - 1)

    def select(self, cell_filter):
        return Scores(self, [c for c in set(self.by_cell) | set(self.variants) if cell_filter(*c)])


class Scores:
    """Sorted scores over some cells, so that recall and precision at any
    threshold are binary searches."""

    def __init__(self, pairs, cells):
        chosen = sorted({i for c in cells for i in pairs.by_cell.get(c, ())})
        best, true, false = {}, [], []
        for i in chosen:
            s, kind, variant = pairs.scores[i]
            if variant:
                best[variant] = s
            if kind != "grey":
                (true if kind == "true" else false).append(s)
        self.true, self.false = sorted(true), sorted(false)
        self.variants = collections.defaultdict(list)
        for c in cells:
            for r in pairs.variants.get(c, ()):
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


def runs_of(ts):
    runs = []
    for t in ts:
        if runs and round(t - runs[-1][-1], 2) <= 0.01:
            runs[-1].append(t)
        else:
            runs.append([t])
    return runs


def spans(ts):
    return ", ".join(f"{r[0]:.2f}-{r[-1]:.2f}" if len(r) > 1 else f"{r[0]:.2f}"
                     for r in runs_of(ts)) or "none"


def middle(ts):
    widest = max(runs_of(ts), key=len, default=[])
    return widest[(len(widest) - 1) // 2] if widest else None


def figures(pooled, per_seed, t):
    """Recall at each rate and precision, all seeds together, and the range
    over the seeds of the 10 % recall and of the precision."""
    out = "/".join(f"{pooled.recall(r, t):.3f}" for r in RATES) + f", {pooled.precision(t):.4f}"
    if len(per_seed) > 1:
        r10 = [s.recall(0.10, t) for s in per_seed]
        p = [s.precision(t) for s in per_seed]
        out += f" (seeds: {min(r10):.3f}-{max(r10):.3f}, {min(p):.4f}-{max(p):.4f})"
    return out


def summary(name, pairs, seeds, lowest):
    per_seed = {s: pairs.select(lambda se, sp, *_, s=s: se == s and sp == "chosen") for s in seeds}
    candidates = [k / 100 for k in range(round(lowest * 100), 100)]
    ok = {s: [t for t in candidates if sc.meets(t)] for s, sc in per_seed.items()}
    every = [t for t in candidates if all(t in ok[s] for s in seeds)]
    t = middle(every)
    each = "; ".join(spans(ok[s]) for s in seeds)
    if t is None:
        return f"| {name} | {each} | none | — | | |"
    cols = []
    for split in SPLITS:
        pooled = pairs.select(lambda se, sp, *_, x=split: sp == x)
        seeds_ = [pairs.select(lambda se, sp, *_, s=s, x=split: se == s and sp == x) for s in seeds]
        cols.append(figures(pooled, seeds_, t))
    return f"| {name} | {each} | {spans(every)} | {t:.2f} | {cols[0]} | {cols[1]} |"


def table(pairs, seeds, t):
    head = " | ".join(f"{r:.0%}" for r in RATES)
    print(f"| texts | bases | {head} | precision (false pairs) | bases | {head} | precision (false pairs) |")
    print("|---|" + "---|" * 12)
    cells = [("all", lambda se, so, le: True)]
    if len(seeds) > 1:
        cells += [(f"seed {s}", lambda se, so, le, s=s: se == s) for s in seeds]
    cells += [(s, lambda se, so, le, s=s: so == s) for s in SOURCES]
    cells += [(l, lambda se, so, le, l=l: le == l) for l in LENGTHS]
    cells += [(f"{s} {l}", lambda se, so, le, s=s, l=l: so == s and le == l)
              for s in SOURCES for l in LENGTHS]
    for label, cell in cells:
        out = []
        for split in SPLITS:
            sc = pairs.select(lambda se, sp, so, le, c=cell, x=split: sp == x and c(se, so, le))
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
    ap.add_argument("runs", nargs="+", help="NAME=PAIRS.jsonl[,PAIRS.jsonl...]")
    ap.add_argument("--at", action="append", default=[], help="NAME=THRESHOLD: the full table")
    ap.add_argument("--lowest", type=float, default=0.5,
                    help="the lowest threshold the pairs were searched at (lower ones are not tried)")
    args = ap.parse_args()
    rows = load_rows(args.set)
    seeds = sorted({r["seed"] for r in rows.values()})
    loaded = {}
    rates = "/".join(f"{r:.0%}" for r in RATES)
    print(f"| configuration | thresholds meeting the targets on the chosen sets, seed {', '.join(map(str, seeds))} "
          f"| in every seed | rule's choice | chosen: recall at {rates}, precision | held: the same |")
    print("|---|---|---|---|---|---|")
    for spec in args.runs:
        name, paths = spec.split("=", 1)
        loaded[name] = Pairs(rows, paths)
        print(summary(name, loaded[name], seeds, args.lowest), flush=True)
    for spec in args.at:
        name, t = spec.split("=")
        print(f"\n{name} at threshold {float(t):.2f}, seeds {', '.join(map(str, seeds))} together; "
              f"chosen sets | kept-aside (held) sets:\n")
        table(loaded[name], seeds, float(t))


if __name__ == "__main__":
    main()
