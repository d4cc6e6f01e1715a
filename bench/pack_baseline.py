#!/usr/bin/env python3
"""Baseline for bench/pack.cpp: the same RL packing as forge-pack, written
plainly in Python (standard library only), so the benchmark compares like
with like.

Input: JSONL, one recorded call per line: rollout_id, task_id, seq,
prompt_ids, completion_ids, logprobs, finish_reason, reward.
Does: prefix-merge each rollout's calls (completion tokens mask 1), validate
(>= 1 trainable token, ends in a stopped completion, <= budget), GRPO
advantages per task, best-fit-decreasing packing into `budget` tokens
(bisect over a sorted list of remaining capacities), and one safetensors file
per micro-batch (flat input_ids, position_ids, loss_mask, rollout_log_probs,
advantages, cu_seqlens).
Prints one JSON line of timings (process CPU time, so that other load on
a shared machine does not skew the comparison) and counts.

Usage: pack_baseline.py CALLS.jsonl OUT_DIR BUDGET
"""
import bisect
import json
import math
import os
import struct
import sys
import time
from array import array


def merge(calls):
    samples = []
    cur = None
    for c in sorted(calls, key=lambda c: c["seq"]):
        p, comp, lp = c["prompt_ids"], c["completion_ids"], c["logprobs"]
        if cur is not None and len(p) >= len(cur["ids"]) and p[:len(cur["ids"])] == cur["ids"]:
            tail = p[len(cur["ids"]):]
        else:
            cur = {"ids": [], "mask": [], "lp": []}
            samples.append(cur)
            tail = p
        cur["ids"].extend(tail)
        cur["mask"].extend([0] * len(tail))
        cur["lp"].extend([0.0] * len(tail))
        cur["ids"].extend(comp)
        cur["mask"].extend([1] * len(comp))
        cur["lp"].extend(lp if len(lp) == len(comp) else [0.0] * len(comp))
        cur["finish"] = c["finish_reason"]
    return samples


def grpo(rewards, eps=1e-6):
    n = len(rewards)
    if n == 1:
        return [rewards[0] / (1 + eps)]
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1))
    return [(r - mean) / (std + eps) for r in rewards]


def best_fit_decreasing(lengths, budget):
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    bins, used = [], []
    rooms = []  # sorted (room, bin) pairs
    for i in order:
        n = lengths[i]
        k = bisect.bisect_left(rooms, (n, -1))
        if k == len(rooms):
            b = len(bins)
            bins.append([])
            used.append(0)
        else:
            b = rooms.pop(k)[1]
        bins[b].append(i)
        used[b] += n
        if budget - used[b] > 0:
            bisect.insort(rooms, (budget - used[b], b))
    return bins, used


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    offset, blobs = 0, []
    for name, dtype, data in tensors:
        raw = data.tobytes()
        header[name] = {"dtype": dtype, "shape": [len(data)], "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main(path, out_dir, budget):
    t0 = time.process_time()
    by_rollout = {}
    with open(path) as f:
        for line in f:
            c = json.loads(line)
            by_rollout.setdefault(c["rollout_id"], []).append(c)
    t1 = time.process_time()

    rows, groups = [], {}
    for rid, calls in by_rollout.items():
        task = calls[0]["task_id"]
        reward = calls[0]["reward"]
        groups.setdefault(task, []).append((rid, reward, []))
        for s in merge(calls):
            if sum(s["mask"]) == 0 or s["mask"][-1] != 1 or s["finish"] not in ("stop", "tool_calls"):
                continue
            if len(s["ids"]) > budget:
                continue
            groups[task][-1][2].append(s)
    for task, members in groups.items():
        adv = grpo([r for _, r, _ in members])
        for (rid, r, samples), a in zip(members, adv):
            for s in samples:
                rows.append((task, rid, s, a))
    t_assembled = time.process_time()
    lengths = [len(s["ids"]) for _, _, s, _ in rows]
    bins, used = best_fit_decreasing(lengths, budget)
    t_planned = time.process_time()
    os.makedirs(out_dir, exist_ok=True)
    for b, items in enumerate(bins):
        ids, pos, mask, lp, adv, cu = array("i"), array("i"), array("B"), array("f"), array("f"), array("i", [0])
        uids, rids = [], []
        for i in items:
            task, rid, s, a = rows[i]
            ids.extend(s["ids"])
            pos.extend(range(len(s["ids"])))
            mask.extend(s["mask"])
            lp.extend(s["lp"])
            adv.extend([a if m else 0.0 for m in s["mask"]])
            cu.append(len(ids))
            uids.append(task)
            rids.append(rid)
        write_safetensors(os.path.join(out_dir, "batch-%06d.safetensors" % b),
                          [("input_ids", "I32", ids), ("position_ids", "I32", pos),
                           ("rollout_log_probs", "F32", lp), ("advantages", "F32", adv),
                           ("cu_seqlens", "I32", cu), ("loss_mask", "U8", mask)],
                          {"format": "baseline", "uids": json.dumps(uids), "rollout_ids": json.dumps(rids)})
    t2 = time.process_time()
    print(json.dumps({"parse_s": t1 - t0, "pack_s": t2 - t1, "assemble_s": t_assembled - t1,
                      "plan_s": t_planned - t_assembled, "write_s": t2 - t_planned, "rows": len(rows), "bins": len(bins),
                      "tokens": sum(used)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
