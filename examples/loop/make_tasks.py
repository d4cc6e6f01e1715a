#!/usr/bin/env python3
"""Writes the loop's task family: "write the number N into the file F".

  make_tasks.py OUT_DIR [--train 256] [--validation 32] [--heldout 32]

OUT_DIR/SPLIT/<id>/ (SPLIT: train, validation, heldout) are Harbor task
directories (task.toml, instruction.md, tests/test.sh, solution/solve.sh),
runnable as they are on the Docker backend (forge-busybox:latest).
OUT_DIR/SPLIT.jsonl are the same tasks as forge JSONL for the local backend:
its sandbox's / is a host directory, so the verifier is a `command`: the text
of the task's own tests/test.sh (not its path: under bubblewrap the host's /tmp
is out of sight), which finds the sandbox's files under $FORGE_SANDBOX_ROOT
(unset in a container, where the paths are the real ones).

The numbers are four digits, no number in two splits; the file is one of a
few names. The family is fixed (seed 37), so the splits are the same for every
run and every seed of the policy (and a split's first tasks do not change when
another split grows). The validation split decides when SFT stops; the
held-out split measures every stage."""
import argparse
import json
import os
import random

NAMES = ["out.txt", "num.txt", "val.txt", "ans.txt"]

TOML = """version = "1.0"

[metadata]
difficulty = "easy"
category = "file-io"
tags = ["forge-loop", "{split}"]

[verifier]
timeout_sec = 30.0

[agent]
timeout_sec = 120.0

[environment]
docker_image = "forge-busybox:latest"
cpus = 1
memory_mb = 512
storage_mb = 1024
"""

TEST = """#!/bin/sh
# Harbor's verifier contract: reward 1 when /work/{name} holds exactly {number}.
# FORGE_SANDBOX_ROOT is where forge-launch's local backend keeps the sandbox's /
# (unset in a container). POSIX sh: the image is busybox.
root="${{FORGE_SANDBOX_ROOT:-}}"
mkdir -p "$root/logs/verifier"
if [ -f "$root/work/{name}" ] && [ "$(cat "$root/work/{name}")" = "{number}" ]; then
  echo 1 > "$root/logs/verifier/reward.txt"
  exit 0
fi
echo 0 > "$root/logs/verifier/reward.txt"
exit 1
"""

SOLVE = """#!/bin/sh
set -e
mkdir -p /work
echo {number} > /work/{name}
"""


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def task_dir(root, split, task_id, number, name):
    d = os.path.join(root, split, task_id)
    instruction = "Write the number %d into the file %s.\n" % (number, name)
    write(os.path.join(d, "task.toml"), TOML.format(split=split))
    write(os.path.join(d, "instruction.md"), instruction)
    test = TEST.format(name=name, number=number)
    write(os.path.join(d, "tests", "test.sh"), test, 0o755)
    write(os.path.join(d, "solution", "solve.sh"), SOLVE.format(name=name, number=number), 0o755)
    return {"schema": "forge.task/1", "id": task_id, "instruction": instruction,
            "agent": {"timeout_sec": 120}, "environment": {"cpus": 1, "memory_mb": 512},
            "verifier": {"kind": "command", "timeout_sec": 30, "command": test},
            "metadata": {"category": "file-io", "tags": ["forge-loop", split]}}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--train", type=int, default=256)
    p.add_argument("--validation", type=int, default=32)
    p.add_argument("--heldout", type=int, default=32)
    a = p.parse_args()
    root = os.path.abspath(a.out_dir)
    # One shuffle of every number; each split takes its own third of it, and
    # its file names from its own generator, so its tasks depend only on its size.
    numbers = list(range(1000, 10000))
    random.Random(37).shuffle(numbers)
    third = len(numbers) // 3
    sizes = {"train": a.train, "validation": a.validation, "heldout": a.heldout}
    os.makedirs(root, exist_ok=True)
    for k, (split, size) in enumerate(sizes.items()):
        if size > third:
            p.error("--%s %d: at most %d tasks" % (split, size, third))
        rng = random.Random("37-" + split)
        with open(os.path.join(root, split + ".jsonl"), "w") as f:
            for i, number in enumerate(numbers[k * third:k * third + size]):
                record = task_dir(root, split, "%s-%03d" % (split, i), number, rng.choice(NAMES))
                f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
