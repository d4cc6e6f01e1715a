#!/usr/bin/env python3
"""Builds forge-dedup's calibration set from real text on this machine.

Base texts of four kinds and three lengths:
  doc   paragraphs of /usr/share/doc/*/ README, changelog and copyright files
  man   paragraphs of man pages (man1, rendered by groff to plain text)
  code  runs of lines from /usr/include/*.h and the Python standard library
  traj  agent trajectories in forge's rendered form ("role: text" lines, tool
        calls as name(arguments), lib/dedup/trajectory.h), made from a task
        paragraph and real commands run here with their real output
lengths: short (15-40 words), medium (40-150), long (150-600).

Bases that share much with an earlier base (a fifth of the shorter one's word trigrams) are
left out, and each file gives at most one base, so that two bases are
unrelated. Each base gets variants with word edits at known rates: 0 %
(whitespace reflowed only), 2, 5 and 10 % (its cluster: duplicates); 20 and
30 % (a grey zone: neither counted as a duplicate nor as a false match); and
a heavy rewrite at 50 % (its own cluster: not a duplicate). An edit is a substitution, an insertion, a deletion or a swap of
two neighbouring words (a reordering), chosen uniformly; the number of edits
is round(rate x words), at least one for a non-zero rate.

Writes JSONL: {"id", "cluster", "base", "source", "length", "rate", "text"}.
  dedup_calibration_set.py [--per-cell 40] [--seed 1] > set.jsonl
"""
import argparse
import glob
import gzip
import json
import os
import random
import re
import subprocess
import sys

RATES = [0.0, 0.02, 0.05, 0.10]
GREY = [0.20, 0.30]
HEAVY = 0.50
LENGTHS = {"short": (15, 40), "medium": (40, 150), "long": (150, 600)}


def read_text(path):
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt", errors="replace") as f:
                return f.read(400000)
        with open(path, errors="replace") as f:
            return f.read(400000)
    except OSError:
        return ""


def paragraphs(text):
    """Blank-line separated blocks, whitespace inside kept."""
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text) if p.strip()]


def doc_pool(rng):
    files = []
    for pattern in ("README*", "changelog*", "copyright", "NEWS*"):
        files += glob.glob("/usr/share/doc/*/" + pattern)
    rng.shuffle(files)
    for path in files[:1500]:
        for p in paragraphs(read_text(path)):
            yield path, p


def man_pool(rng):
    pages = sorted(glob.glob("/usr/share/man/man1/*.1.gz"))
    rng.shuffle(pages)
    for page in pages[:250]:
        src = read_text(page)
        if not src or src.startswith(".so "):
            continue
        try:
            out = subprocess.run(["groff", "-mandoc", "-Tutf8", "-P-cbou", "-rHY=0", "-rLL=100n"],
                                 input=src, capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = out.splitlines()[1:-1]  # page header and footer
        paras = paragraphs("\n".join(lines))
        i = 0
        while i < len(paras):  # runs of 1-8 paragraphs, so long texts exist too
            k = rng.randint(1, 8)
            yield page, "\n\n".join(paras[i:i + k])
            i += k


def code_pool(rng):
    files = glob.glob("/usr/include/*.h") + glob.glob("/usr/lib/python3*/*.py")
    rng.shuffle(files)
    for path in files[:800]:
        lines = read_text(path).splitlines()
        start = 0
        while start < len(lines):
            n = rng.randint(8, 80)
            yield path, "\n".join(lines[start:start + n])
            start += n


def dpkg_status():
    """Package name -> its paragraph of /var/lib/dpkg/status (what dpkg -s prints)."""
    out = {}
    for para in read_text("/var/lib/dpkg/status").split("\n\n") if os.path.exists("/var/lib/dpkg/status") else []:
        m = re.match(r"Package: (\S+)", para)
        if m:
            out[m.group(1)] = para
    return out


def head(path, n):
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", errors="replace") as f:
            return "".join(line for _, line in zip(range(n), f))
    except OSError as e:
        return str(e)


def traj_pool(rng):
    """Trajectories in forge's rendered form from real commands and their output
    (ls, cat | head, dpkg -s, computed here as those commands print them)."""
    docs = [d for d in glob.glob("/usr/share/doc/*") if os.path.isdir(d)]
    rng.shuffle(docs)
    tasks = [p for _, p in doc_pool(rng) if 15 <= len(p.split()) <= 80]
    status = dpkg_status()
    for i, d in enumerate(docs[:400]):
        pkg = os.path.basename(d)
        task = tasks[i % len(tasks)] if tasks else pkg
        files = sorted(os.listdir(d))
        steps = [f"user: {task}", f'assistant: bash({{"command": "ls {d}"}})', "tool: " + "\n".join(files)]
        if files:
            f = os.path.join(d, rng.choice(files))
            n = rng.randint(3, 25)
            cat = "zcat" if f.endswith(".gz") else "cat"
            steps += [f'assistant: bash({{"command": "{cat} {f} | head -{n}"}})', "tool: " + head(f, n)]
        info = "\n".join(status.get(pkg, f"dpkg-query: package '{pkg}' is not installed").splitlines()[:8])
        steps += [f'assistant: bash({{"command": "dpkg -s {pkg} | head -8"}})', "tool: " + info,
                  f"assistant: The package {pkg} is documented in {d}; done."]
        yield d, "\n".join(s.rstrip("\n") for s in steps)


def fit(text, lo, hi, rng):
    """text cut to a word count in [lo, hi], keeping its whitespace; None if too short."""
    words = list(re.finditer(r"\S+", text))
    if len(words) < lo:
        return None
    n = min(len(words), rng.randint(lo, hi))
    return text[: words[n - 1].end()]


def trigrams(text):
    w = text.lower().split()
    return {" ".join(w[i:i + 3]) for i in range(max(1, len(w) - 2))}


def edit(text, rate, vocab, rng):
    """Word edits at the given rate; separators between words are kept."""
    lead = re.match(r"\s*", text).group(0)
    pairs = re.findall(r"(\S+)(\s*)", text)
    words = [w for w, _ in pairs]
    seps = [s or " " for _, s in pairs]
    if rate == 0:
        return " ".join(words)  # 0 %: the same words, whitespace reflowed
    edits = max(1, round(rate * len(words)))
    for _ in range(edits):
        i = rng.randrange(len(words))
        op = rng.randrange(4)
        if op == 0:
            words[i] = rng.choice(vocab)
        elif op == 1:
            words.insert(i, rng.choice(vocab))
            seps.insert(i, " ")
        elif op == 2 and len(words) > 2:
            del words[i]
            del seps[i]
        elif i + 1 < len(words):
            words[i], words[i + 1] = words[i + 1], words[i]
    return lead + "".join(w + s for w, s in zip(words, seps)).rstrip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-cell", type=int, default=40, help="bases per source and length")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    pools = {"doc": doc_pool, "man": man_pool, "code": code_pool, "traj": traj_pool}
    bases, seen = [], []
    for source, pool in pools.items():
        counts = {k: 0 for k in LENGTHS}
        used = set()
        for path, text in pool(rng):
            if path in used:
                continue
            open_cells = [k for k in LENGTHS if counts[k] < args.per_cell]
            if not open_cells:
                break
            # Long cells need long texts: join the next paragraphs when short.
            length = rng.choice(open_cells)
            cut = fit(text, *LENGTHS[length], rng)
            if cut is None:
                if len(text.split()) >= LENGTHS["short"][0] and "short" in open_cells:
                    length, cut = "short", fit(text, *LENGTHS["short"], rng)
                if cut is None:
                    continue
            grams = trigrams(cut)
            # Unrelated: no other base shares a fifth of the shorter one's
            # word trigrams (licence headers, changelog boilerplate).
            if any(len(grams & g) / max(1, min(len(grams), len(g))) >= 0.2 for g in seen):
                continue
            seen.append(grams)
            used.add(path)
            counts[length] += 1
            bases.append((source, length, cut))
        print(f"{source}: " + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)
    vocab = [w for _, _, t in bases for w in t.split()]
    out = sys.stdout
    for b, (source, length, text) in enumerate(bases):
        def emit(suffix, cluster, rate, body):
            out.write(json.dumps({"id": f"b{b}-{suffix}", "cluster": cluster, "base": b,
                                  "source": source, "length": length, "rate": rate,
                                  "text": body}) + "\n")
        emit("orig", f"c{b}", None, text)
        for rate in RATES:
            emit(f"r{round(rate * 100)}", f"c{b}", rate, edit(text, rate, vocab, rng))
        for rate in GREY:
            emit(f"r{round(rate * 100)}", f"g{b}-{round(rate * 100)}", rate, edit(text, rate, vocab, rng))
        emit("heavy", f"h{b}", HEAVY, edit(text, HEAVY, vocab, rng))


if __name__ == "__main__":
    main()
