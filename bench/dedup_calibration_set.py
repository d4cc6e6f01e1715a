#!/usr/bin/env python3
"""Builds forge-dedup's calibration sets from real text on this machine.

Base texts of six sources and four lengths, each from one Debian package (or
npm module, or licence family: its *group*):
  doc      /usr/share/doc/<package>/: README, NEWS, changelog, copyright,
           .txt, .md, .rst, .html (tags stripped)
  license  /usr/share/common-licenses (group: the family, GPL-2 and GPL-3 one),
           and the LICENSE and COPYING files of packages and npm modules
  man      man pages of sections 1, 5, 7 and 8, rendered by groff
  code     runs of lines of C, C++, Python, Perl, JavaScript, shell, CMake,
           Tcl and Lua sources (/usr/include, /usr/lib/python3*, perl, node
           modules, /usr/bin scripts, /usr/share/cmake-*)
  comment  the comments and docstrings of such sources, without the code
  traj     agent trajectories recorded by forge-proxy (openai-chat or
           anthropic clients, bash tool calls running real commands here on
           the package's files) and rendered from the store by
           forge-dedup --trajectories
lengths (words): short 15-40, medium 40-150, long 150-600, xlong 600-3000
(trajectories: medium and longer).

Each group is in one of two sets, by a hash of its name: "chosen" (the
defaults are chosen on it) or "held" (kept aside; only checks them), so a
held-out text comes from packages the choice never saw. A group gives at most
3 bases per source, a file at most one (a licence several); a base that
shares a fifth of the shorter one's word trigrams with any earlier base is
left out, so that two bases are unrelated (licence headers and changelog
boilerplate are real duplicates).

The edit model. A variant with rate r has k = ceil(r x words) edits (words:
the base's whitespace-separated words; a trajectory's: of its messages'
contents and commands), each anchored at a distinct word of the base chosen
uniformly, each one of, uniformly: substitute the word by a random word of
the set's vocabulary, insert a random word before it, delete it, or move it
1-3 places left or right (a reordering of nearby words; the separators stay
where they were). Rates: 0 % (the same words, whitespace reflowed), 2, 5, 10 %
(the base's cluster: duplicates); 20 and 30 % (a grey zone: counted neither
way); 50 % (a heavy rewrite: its own cluster, not a duplicate).

Writes into --out DIR:
  texts.jsonl         {"id", "cluster", "base", "seed", "source", "group",
                       "split", "length", "rate", "words", "text"}
  trajectories.jsonl  the same with "rollout_id" in place of "text"
  exchanges.jsonl     forge.call/1 recorded exchanges (forge-proxy --replay),
                      each with its rollout_id, in the order to send them
  dedup_calibration_set.py [--per-cell 40] [--seed 1] --out DIR
"""
import argparse
import collections
import glob
import gzip
import hashlib
import html
import json
import math
import os
import random
import re
import subprocess
import sys

RATES = [0.0, 0.02, 0.05, 0.10]
GREY = [0.20, 0.30]
HEAVY = 0.50
LENGTHS = {"short": (15, 40), "medium": (40, 150), "long": (150, 600), "xlong": (600, 3000)}
PER_GROUP = 3  # bases per group and source


# ---------------------------------------------------------------- files

def read_text(path, limit=600000):
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", errors="replace") as f:
            return f.read(limit)
    except (OSError, EOFError, gzip.BadGzipFile):
        return ""


def paragraphs(text):
    """Blank-line separated blocks, whitespace inside kept."""
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text) if p.strip()]


def dpkg_owners():
    """Path -> the Debian package that installed it (/var/lib/dpkg/info/*.list)."""
    owners = {}
    for lst in glob.glob("/var/lib/dpkg/info/*.list"):
        pkg = os.path.basename(lst)[:-5].split(":")[0]
        for line in read_text(lst).splitlines():
            owners.setdefault(line, pkg)
    return owners


def group_of(path, owners):
    """The package (or npm module) a file belongs to."""
    if path in owners:
        return owners[path]
    real = os.path.realpath(path)
    if real in owners:
        return owners[real]
    m = re.search(r".*/node_modules/(@[^/]+/[^/]+|[^/]+)/", path)
    if m:
        return "npm:" + m.group(1)
    m = re.match(r"/usr/share/doc/([^/]+)/", path)
    return m.group(1) if m else "/".join(path.split("/")[:4])


def split_of(group):
    """chosen or held, by a hash of the group's name (not by row)."""
    return "chosen" if hashlib.sha256(group.encode()).digest()[0] % 2 == 0 else "held"


# ---------------------------------------------------------------- pools
# Each pool yields (path, group, load): load() gives the file's text in blocks
# that runs of consecutive ones are cut from (called only for a file used).

def doc_pool(rng, owners):
    files = []
    for pattern in ("README*", "NEWS*", "changelog*", "copyright", "*.txt*", "*.md*", "*.rst*",
                    "*.html"):
        files += glob.glob("/usr/share/doc/*/" + pattern) + glob.glob("/usr/share/doc/*/*/" + pattern)
    rng.shuffle(files)

    def load(path):
        text = read_text(path)
        if path.endswith(".html"):
            text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
            text = html.unescape(re.sub(r"(?s)<[^>]+>", "", text))
        return paragraphs(text)

    for path in files:
        yield path, group_of(path, owners), lambda p=path: load(p)


def license_pool(rng, owners):
    """Debian's common licences (group: the family), then the LICENSE and
    COPYING files packages ship (group: the package; most are copies of one
    of a few licences, which the relatedness check leaves out)."""
    common = sorted(glob.glob("/usr/share/common-licenses/*"))
    rng.shuffle(common)
    for path in common:
        if os.path.islink(path):  # GPL -> GPL-3: the same text
            continue
        family = re.sub(r"[-0-9.]+$", "", os.path.basename(path))
        paras = paragraphs(read_text(path))
        # Several bases per licence, from different places of it.
        for start in rng.sample(range(len(paras)), len(paras)):
            yield path + f"#{start}", "license:" + family, lambda s=start: paras[s:]
    shipped = [f for pattern in ("/usr/share/doc/*/LICENSE*", "/usr/share/doc/*/COPYING*",
                                 "/usr/lib/python3/dist-packages/*.dist-info/LICENSE*",
                                 "/usr/lib/node_modules/**/LICENSE*")
               for f in glob.glob(pattern, recursive=True) if os.path.isfile(f)]
    rng.shuffle(shipped)
    for path in shipped:
        yield path, group_of(path, owners), lambda p=path: paragraphs(read_text(p))


def man_pool(rng, owners):
    pages = []
    for section in ("1", "5", "7", "8"):
        pages += glob.glob(f"/usr/share/man/man{section}/*.gz")
    rng.shuffle(pages)

    def load(page):
        src = read_text(page)
        if not src or src.startswith(".so "):
            return []
        try:
            out = subprocess.run(["groff", "-mandoc", "-Tutf8", "-P-cbou", "-rHY=0", "-rLL=100n"],
                                 input=src, capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
        lines = out.splitlines()[1:-1]  # page header and footer
        return paragraphs("\n".join(lines))

    for page in pages:
        yield page, group_of(page, owners), lambda p=page: load(p)


LANGS = {  # language -> (file globs, line comment marker, block comment (open, close))
    "c": (["/usr/include/*.h", "/usr/include/*/*.h", "/usr/share/doc/*/examples/*.c"], "//", ("/*", "*/")),
    "c++": (["/usr/include/c++/*/bits/*.h", "/usr/include/boost/*/*.hpp", "/usr/include/*/*.hpp",
             "/usr/include/*/*/*.hpp"], "//", ("/*", "*/")),
    "python": (["/usr/lib/python3*/*.py", "/usr/lib/python3/dist-packages/*/*.py"], "#", ('"""', '"""')),
    "perl": (["/usr/share/perl5/*/*.pm", "/usr/share/perl5/*/*/*.pm", "/usr/share/perl/5*/*/*.pm"], "#",
             ("\n=", "\n=cut")),
    "javascript": (["/usr/lib/node_modules/**/*.js", "/usr/share/javascript/*/*.js"], "//", ("/*", "*/")),
    "shell": (["/usr/bin/*", "/usr/sbin/*", "/usr/share/*/*.sh", "/usr/lib/*/*.sh"], "#", None),
    "cmake": (["/usr/share/cmake-*/Modules/*.cmake", "/usr/lib/*/cmake/*/*.cmake"], "#", ("#[[", "]]")),
    "tcl": (["/usr/share/tcltk/*/*.tcl", "/usr/share/tcltk/*/*/*.tcl"], "#", None),
    "lua": (["/usr/share/**/*.lua"], "--", ("--[[", "]]")),
}


_files = {}


def source_files(lang, rng):
    if lang not in _files:
        _files[lang] = find_sources(lang)
    files = list(_files[lang])
    rng.shuffle(files)
    return files


def find_sources(lang):
    globs, _, _ = LANGS[lang]
    files = [f for g in globs for f in glob.glob(g, recursive=True) if os.path.isfile(f)]
    if lang == "shell":
        files = [f for f in files if f.endswith(".sh") or read_text(f, 64).startswith(("#!/bin/sh", "#!/bin/bash", "#! /bin/sh", "#!/usr/bin/env bash"))]
    return sorted(f for f in files if os.path.getsize(f) < 2_000_000)


def interleave(per_lang):
    """Files of every language in turn, so that no language fills a source."""
    queues = [collections.deque(fs) for fs in per_lang.values() if fs]
    while queues:
        for q in list(queues):
            if not q:
                queues.remove(q)
                continue
            yield q.popleft()


def code_pool(rng, owners):
    per_lang = {lang: source_files(lang, rng) for lang in LANGS}
    def load(path):
        lines = read_text(path).splitlines()
        blocks = ["\n".join(lines[i:i + 8]) for i in range(0, len(lines), 8)]
        return [b for b in blocks if b.strip()]

    for path in interleave(per_lang):
        yield path, group_of(path, owners), lambda p=path: load(p)


def comments(text, lang):
    """The comment blocks (and docstrings) of a source file, without code."""
    _, marker, block = LANGS[lang]
    out = []
    if block:
        o, c = block
        for m in re.finditer(re.escape(o) + r"(.*?)" + re.escape(c), text, re.S):
            body = m.group(1)
            body = "\n".join(re.sub(r"^\s*\*?\s?", "", l) for l in body.splitlines())
            out.append(body.strip())
    run = []
    for line in text.splitlines() + [""]:
        s = line.strip()
        if s.startswith(marker) and not s.startswith("#!"):
            run.append(s[len(marker):].lstrip("/#- ").rstrip())
        elif run:
            out.append("\n".join(run).strip())
            run = []
    return [b for b in out if len(b.split()) >= 4]


def comment_pool(rng, owners):
    per_lang = {lang: source_files(lang, rng) for lang in LANGS}
    lang_of = {f: lang for lang, fs in per_lang.items() for f in fs}
    for path in interleave(per_lang):
        yield path, group_of(path, owners), lambda p=path: comments(read_text(p), lang_of[p])


# ---------------------------------------------------------------- cutting

def cut_run(blocks, lo, hi, rng):
    """A run of consecutive blocks cut to a word count in [lo, hi] (whitespace
    inside kept), from a random starting block; None when the file is too short."""
    counts = [len(b.split()) for b in blocks]
    total = sum(counts)
    if total < lo:
        return None
    target = rng.randint(lo, min(hi, total))
    after, starts = 0, []  # blocks from which target words remain
    for i in range(len(blocks) - 1, -1, -1):
        after += counts[i]
        if after >= target:
            starts.append(i)
    start = rng.choice(starts)
    text = "\n\n".join(blocks[start:start + target])
    words = list(re.finditer(r"\S+", text))
    return text[: words[target - 1].end()]


def trigrams(words):
    w = [x.lower() for x in words]
    return {" ".join(w[i:i + 3]) for i in range(max(1, len(w) - 2))}


class Bases:
    """Unrelated bases, per source, length and set, up to their quota."""

    def __init__(self, per_cell):
        self.per_cell = per_cell
        self.rows = []  # (source, group, split, length, payload, words)
        self.postings = collections.defaultdict(list)  # word trigram -> bases
        self.sizes = []
        self.count = collections.Counter()
        self.per_group = collections.Counter()
        self.used_files = set()

    def open_lengths(self, source, split, lengths):
        return [k for k in lengths if self.count[source, split, k] < self.per_cell]

    def unrelated(self, grams):
        shared = collections.Counter(b for g in grams for b in self.postings.get(g, ()))
        return not any(n / max(1, min(len(grams), self.sizes[b])) >= 0.2 for b, n in shared.items())

    def add(self, source, group, split, length, payload, words, grams):
        for g in grams:
            self.postings[g].append(len(self.sizes))
        self.sizes.append(len(grams))
        self.rows.append((source, group, split, length, payload, words))
        self.count[source, split, length] += 1
        self.per_group[source, group] += 1

    def report(self, source):
        """Bases per length in each set, on stderr (short/medium/long/xlong)."""
        print(f"{source}: " + ", ".join(
            f"{s} {'/'.join(str(self.count[source, s, k]) for k in LENGTHS)}" for s in ("chosen", "held")),
            file=sys.stderr)


def fill_from(pool, source, bases, rng, lengths):
    for path, group, load in pool:
        split = split_of(group)
        capped = bases.per_group[source, group] >= PER_GROUP and not group.startswith("license:")
        if path in bases.used_files or capped:
            continue
        if all(not bases.open_lengths(source, s, lengths) for s in ("chosen", "held")):
            break
        open_ = bases.open_lengths(source, split, lengths)
        if not open_:
            continue
        blocks = load()
        length = rng.choice(open_)
        text = cut_run(blocks, *LENGTHS[length], rng)
        if text is None:
            fitting = [k for k in open_ if sum(len(b.split()) for b in blocks) >= LENGTHS[k][0]]
            if not fitting:
                continue
            length = max(fitting, key=lambda k: LENGTHS[k][0])
            text = cut_run(blocks, *LENGTHS[length], rng)
        grams = trigrams(text.split())
        if not bases.unrelated(grams):
            continue
        bases.used_files.add(path)
        bases.add(source, group, split, length, text, text.split(), grams)
    bases.report(source)


# ---------------------------------------------------------------- trajectories

SYSTEM = ("You are a coding agent working in a Debian container. Use the bash tool to inspect "
          "files and run commands; answer with what you found.")


def run(command):
    try:
        p = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=20,
                           errors="replace", cwd="/tmp")
        return (p.stdout + p.stderr).rstrip("\n")
    except subprocess.TimeoutExpired:
        return "timeout"


def traj_steps(pkg, doc_dir, rng):
    """Commands an agent would run to study a package, each with its real output."""
    files = sorted(f for f in glob.glob(doc_dir + "/**", recursive=True) if os.path.isfile(f))
    rng.shuffle(files)
    steps = [f"ls -la {doc_dir}", f"dpkg -s {pkg}"]
    for f in files[:6]:
        cat = "zcat" if f.endswith(".gz") else "cat"
        n = rng.randint(10, 200)
        steps.append(rng.choice([f"{cat} {f} | head -n {n}", f"{cat} {f} | wc -l",
                                 f"{cat} {f} | grep -n -i -m 8 '{pkg.split('-')[0][:8]}'"]))
    steps.append(f"dpkg -L {pkg} | head -n {rng.randint(5, 40)}")
    for cmd in steps:
        yield cmd, run(cmd)


def trajectory(pkg, task, rng, lo, hi):
    """Messages of a rollout ("role", "text" or "command") up to about a word budget."""
    target = rng.randint(lo, hi)
    msgs = [("user", f"{task}\n\n(The package is {pkg}.)")]
    words = len(msgs[0][1].split())
    notes = ["Let me look at the package's files.", "I will check what this prints.",
             "Next, the documentation itself.", "Checking the installed files.",
             "Let me read more of this.", "That tells me about the package; one more look."]
    for cmd, out in traj_steps(pkg, f"/usr/share/doc/{pkg}", rng):
        if words >= target:
            break
        lines = out.splitlines()
        budget = target - words - len(cmd.split()) - 8
        kept, n = [], 0
        for line in lines:
            if n + len(line.split()) > budget:
                break
            kept.append(line)
            n += len(line.split())
        msgs.append(("call", rng.choice(notes), cmd))
        msgs.append(("tool", "\n".join(kept) or "(no output)"))
        words += len(cmd.split()) + 8 + n + 1
    msgs.append(("assistant", f"Done: I looked at {pkg}'s documentation and installed files; "
                              "the details are in the outputs above."))
    return msgs


def traj_pool(rng):
    """Packages with a documentation directory, each with a task paragraph from
    its own documentation (its group, so that the task is on the same side)."""
    docs = sorted(d for d in glob.glob("/usr/share/doc/*") if os.path.isdir(d) and not os.path.islink(d))
    rng.shuffle(docs)
    for d in docs:
        pkg = os.path.basename(d)
        paras = [p for f in glob.glob(d + "/*") if os.path.isfile(f)
                 for p in paragraphs(read_text(f, 100000)) if 15 <= len(p.split()) <= 80]
        if paras:
            yield pkg, rng.choice(paras)


def fill_trajectories(bases, rng, lengths):
    source = "traj"
    for pkg, task in traj_pool(rng):
        split = split_of(pkg)
        if all(not bases.open_lengths(source, s, lengths) for s in ("chosen", "held")):
            break
        open_ = bases.open_lengths(source, split, lengths)
        if not open_ or bases.per_group[source, pkg] >= 1:
            continue
        # Related or not by the task: the rest (commands, dpkg's field names,
        # the agent's phrases) is what every rollout of a harness shares.
        grams = trigrams(task.split())
        if not bases.unrelated(grams):
            continue
        length = rng.choice(open_)
        lo, hi = LENGTHS[length]
        msgs = trajectory(pkg, task, rng, lo, hi)
        words = [w for m in msgs for part in m[1:] for w in part.split()]
        if len(words) < lo:
            continue
        bases.add(source, pkg, split, length, msgs, words, grams)
    bases.report(source)


# ---------------------------------------------------------------- edits

def tokens_of(segments):
    """Words of several texts: [segment, word, separator after it]."""
    toks = []
    for s, text in enumerate(segments):
        for word, sep in re.findall(r"(\S+)(\s*)", text):
            toks.append([s, word, sep or " "])
    return toks


def edit_segments(segments, rate, vocab, rng):
    """The edit model (see the module's docstring) over texts taken together;
    words move only within their own text. Returns the edited texts."""
    toks = tokens_of(segments)
    per_segment = collections.Counter(t[0] for t in toks)
    if rate == 0:
        out = [[] for _ in segments]
        for s, w, _ in toks:
            out[s].append(w)
        return [" ".join(ws) for ws in out]
    k = max(1, math.ceil(rate * len(toks)))
    anchors = set(rng.sample(range(len(toks)), min(k, len(toks))))
    for t in range(len(toks)):
        toks[t].append(t in anchors)  # [segment, word, sep, anchored]
    i = 0
    while i < len(toks):
        s, word, sep, anchored = toks[i]
        if not anchored:
            i += 1
            continue
        toks[i][3] = False
        op = rng.randrange(4)
        if op == 0:  # substitute
            toks[i][1] = rng.choice(vocab)
        elif op == 1:  # insert before
            toks.insert(i, [s, rng.choice(vocab), " ", False])
            i += 1
        elif op == 2 and per_segment[s] > 1:  # delete
            per_segment[s] -= 1
            if i > 0 and toks[i - 1][0] == s:
                toks[i - 1][2] = sep if "\n" in sep else toks[i - 1][2]
            del toks[i]
            continue
        else:  # move 1-3 places within its text, separators staying in place
            d = rng.choice([-3, -2, -1, 1, 2, 3])
            j = i + d
            while not (0 <= j < len(toks) and toks[j][0] == s):
                j -= 1 if d > 0 else -1
            words = [t[1] for t in toks[min(i, j):max(i, j) + 1]]
            flags = [t[3] for t in toks[min(i, j):max(i, j) + 1]]
            if j > i:
                words, flags = words[1:] + words[:1], flags[1:] + flags[:1]
            else:
                words, flags = words[-1:] + words[:-1], flags[-1:] + flags[:-1]
            for n, t in enumerate(toks[min(i, j):max(i, j) + 1]):
                t[1], t[3] = words[n], flags[n]
            continue  # the word now at i may still be an anchor
        i += 1
    out = ["" for _ in segments]
    for s, w, sep, _ in toks:
        out[s] += w + sep
    return [o.rstrip() for o in out]


# ---------------------------------------------------------------- output

def traj_exchanges(rollout, msgs, fmt, tool):
    """forge.call/1 lines: one model call per assistant turn, each request
    holding the conversation so far, in the client's format."""
    name, key = tool
    chat = [{"role": "system", "content": SYSTEM}]
    anth = []
    calls = []
    n = 0

    def call(reply):
        if fmt == "openai-chat":
            request = {"model": "policy", "messages": list(chat),
                       "tools": [{"type": "function", "function": {"name": name, "parameters": {
                           "type": "object", "properties": {key: {"type": "string"}}}}}]}
        else:
            request = {"model": "policy", "max_tokens": 4096, "system": SYSTEM, "messages": list(anth),
                       "tools": [{"name": name, "input_schema": {
                           "type": "object", "properties": {key: {"type": "string"}}}}]}
        calls.append({"schema": "forge.call/1", "rollout_id": rollout, "client_format": fmt,
                      "request": request, "upstream_response": {"choices": [
                          {"message": reply, "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}]}})

    for m in msgs:
        if m[0] == "user":
            chat.append({"role": "user", "content": m[1]})
            anth.append({"role": "user", "content": m[1]})
        elif m[0] == "call":
            n += 1
            cid = f"call_{n}"
            args = json.dumps({key: m[2]})
            reply = {"role": "assistant", "content": m[1], "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}]}
            call(reply)
            chat.append(reply)
            anth.append({"role": "assistant", "content": [
                {"type": "text", "text": m[1]},
                {"type": "tool_use", "id": cid, "name": name, "input": {key: m[2]}}]})
        elif m[0] == "tool":
            chat.append({"role": "tool", "tool_call_id": f"call_{n}", "content": m[1]})
            anth.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"call_{n}", "content": m[1]}]})
        else:
            call({"role": "assistant", "content": m[1]})
    return calls


def edit_traj(msgs, rate, vocab, rng):
    """The edit model over a trajectory's texts: contents and commands."""
    parts = [(i, j) for i, m in enumerate(msgs) for j in range(1, len(m))]
    edited = edit_segments([msgs[i][j] for i, j in parts], rate, vocab, rng)
    out = [list(m) for m in msgs]
    for (i, j), text in zip(parts, edited):
        out[i][j] = text
    return [tuple(m) for m in out]


def variants(base):
    """(suffix, cluster, rate) of every text made from a base: the cluster's
    first letter says what it is (c: the base's duplicates, g: grey, h: heavy)."""
    yield "orig", "c" + base, None
    for rate in RATES:
        yield f"r{round(rate * 100)}", "c" + base, rate
    for rate in GREY:
        yield f"r{round(rate * 100)}", f"g{base}-{round(rate * 100)}", rate
    yield "heavy", "h" + base, HEAVY


def write_sets(bases, rng, seed, out_dir):
    vocab = {s: [w for src, _, sp, _, _, words in bases.rows if sp == s for w in words]
             for s in ("chosen", "held")}
    with open(os.path.join(out_dir, "texts.jsonl"), "w") as texts, \
         open(os.path.join(out_dir, "trajectories.jsonl"), "w") as trajs, \
         open(os.path.join(out_dir, "exchanges.jsonl"), "w") as exchanges:
        for b, (source, group, split, length, payload, words) in enumerate(bases.rows):
            if source == "traj":
                fmt = rng.choice(["openai-chat", "anthropic"])
                tool = rng.choice([("bash", "command"), ("shell", "cmd"), ("run_command", "command")])
            base = f"s{seed}b{b}"  # unique across seeds, so that sets can be scored together
            for suffix, cluster, rate in variants(base):
                row = {"id": f"{base}-{suffix}", "cluster": cluster, "base": base, "seed": seed,
                       "source": source, "group": group, "split": split, "length": length,
                       "rate": rate, "words": len(words)}
                if source == "traj":
                    msgs = payload if rate is None else edit_traj(payload, rate, vocab[split], rng)
                    row["rollout_id"] = row["id"]
                    for line in traj_exchanges(row["id"], msgs, fmt, tool):
                        exchanges.write(json.dumps(line) + "\n")
                    trajs.write(json.dumps(row) + "\n")
                else:
                    row["text"] = payload if rate is None else edit_segments([payload], rate, vocab[split], rng)[0]
                    texts.write(json.dumps(row) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-cell", type=int, default=40, help="bases per source, length and set")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True, help="directory for the three files")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    owners = dpkg_owners()
    bases = Bases(args.per_cell)
    for source, pool in (("doc", doc_pool), ("license", license_pool), ("man", man_pool),
                         ("code", code_pool), ("comment", comment_pool)):
        fill_from(pool(rng, owners), source, bases, rng, list(LENGTHS))
    fill_trajectories(bases, rng, ["medium", "long", "xlong"])
    os.makedirs(args.out, exist_ok=True)
    write_sets(bases, rng, args.seed, args.out)


if __name__ == "__main__":
    main()
