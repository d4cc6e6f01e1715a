#!/usr/bin/env python3
"""Baseline for bench/pack.cpp: forge-pack's RL path (`--format rl`, merge
mode, GRPO), written plainly in Python with the standard library only, so
the benchmark compares like with like.

Same steps as forge-pack, same outputs byte for byte:
  1. read the verdict JSONL (rollout_id, task_id, verdict.reward/passed);
  2. per rollout, read its calls' token columns from the SQLite store
     (sqlite3 module, one prepared query per rollout), decode the
     delta-encoded prompt ids (base call's prompt[:prefix_len] + suffix);
  3. drop side calls and failed calls; prefix-merge in seq order (a prompt
     that extends the sample so far is appended: its new tail with mask 0,
     the completion with mask 1), classifying every boundary as clean,
     realign or fork;
  4. validate (>= 1 trainable token, ends on a trainable token, finish
     reason is a stop);
  5. group rollouts by task (first-seen order), GRPO advantages, drop samples
     longer than the budget;
  6. best-fit decreasing (bisect over a sorted list of remaining capacities,
     ties to the bin that got its capacity first, as std::multimap does);
  7. one safetensors file per micro-batch (written to a temporary and
     renamed), tensors and __metadata__ as forge-pack writes them, and one
     JSON index line per file.
Prints one JSON line: process CPU and wall seconds, wall seconds per stage,
and counts.

Usage: pack_baseline.py VERDICTS.jsonl STORE.db OUT_DIR BUDGET FORGE_VERSION
"""
import bisect
import json
import math
import os
import sqlite3
import struct
import sys
import time
from array import array

STOP_REASONS = ("stop", "tool_calls", "end_turn", "tool_use", "STOP")


def dumps(value):
    return json.dumps(value, separators=(",", ":"))


def read_calls(db, rollout_id):
    rows = db.execute(
        "SELECT id, seq, policy_version_start, policy_version_end, prompt_base_call, prompt_prefix_len, "
        "prompt_suffix, completion_ids, logprobs, finish_reason, http_status, error, side_call "
        "FROM calls WHERE rollout_id = ? ORDER BY id", (rollout_id,)).fetchall()
    prompts, calls = {}, []
    for cid, seq, pv0, pv1, base, prefix, suffix, comp, lp, finish, status, error, side in rows:
        prompt = prompts[base][:prefix] if base is not None else []
        prompt.extend(array("i", suffix or b""))
        prompts[cid] = prompt
        calls.append({"seq": seq, "pv0": pv0 or 0, "pv1": pv1 or 0, "prompt": prompt,
                      "completion": array("i", comp or b"").tolist(), "logprobs": array("f", lp or b"").tolist(),
                      "finish": finish or "", "status": status or 0, "error": error or "", "side": side})
    calls.sort(key=lambda c: c["seq"])
    return calls


def merge(calls, counts):
    samples, cur, last_completion_start = [], None, 0
    for c in calls:
        if c["side"]:
            continue
        bad_status = c["status"] != 0 and not (200 <= c["status"] < 300)
        if (bad_status or c["error"]) and not c["completion"]:
            continue
        p, comp, lp = c["prompt"], c["completion"], c["logprobs"]
        if not p or not comp:  # no ids: a message-built sample, never written as tokens
            if cur is not None:
                counts["fork"] += 1
            cur = {"ids": None, "finish": c["finish"]}
            samples.append(cur)
            continue
        extend = False
        if cur is not None:
            if cur["ids"] is None:
                counts["fork"] += 1
            else:
                ids = cur["ids"]
                if len(p) >= len(ids) and p[:len(ids)] == ids:
                    counts["clean"] += 1
                    extend = True
                else:
                    common = 0
                    for a, b in zip(ids, p):
                        if a != b:
                            break
                        common += 1
                    counts["realign" if common >= last_completion_start else "fork"] += 1
        if not extend:
            cur = {"ids": [], "mask": [], "lp": [], "pv0": c["pv0"], "pv1": c["pv1"]}
            samples.append(cur)
        tail = p[len(cur["ids"]):]
        cur["ids"].extend(tail)
        cur["mask"].extend([0] * len(tail))
        cur["lp"].extend([0.0] * len(tail))
        last_completion_start = len(cur["ids"])
        cur["ids"].extend(comp)
        cur["mask"].extend([1] * len(comp))
        cur["lp"].extend(lp if len(lp) == len(comp) else [0.0] * len(comp))
        cur["finish"] = c["finish"]
        cur["pv0"] = min(cur["pv0"], c["pv0"])
        cur["pv1"] = max(cur["pv1"], c["pv1"])
    for i, s in enumerate(samples):
        s["index"] = i
    return samples


def valid(s):
    if s["ids"] is None:
        return False  # no_token_ids
    mask = s["mask"]
    return sum(mask) > 0 and mask[-1] == 1 and s["finish"] in STOP_REASONS


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
    rooms, inserted = [], 0  # sorted (room, insertion number, bin)
    for i in order:
        n = lengths[i]
        k = bisect.bisect_left(rooms, (n, -1, -1))
        if k == len(rooms):
            b = len(bins)
            bins.append([])
            used.append(0)
        else:
            b = rooms.pop(k)[2]
        bins[b].append(i)
        used[b] += n
        if budget - used[b] > 0:
            bisect.insort(rooms, (budget - used[b], inserted, b))
            inserted += 1
    return bins, used


def write_safetensors(path, tensors, metadata):
    # forge-pack's order: widest dtype first, then by name.
    tensors = sorted(tensors, key=lambda t: (-t[2].itemsize, t[0]))
    header = {"__metadata__": metadata}
    offset, blobs = 0, []
    for name, dtype, data in tensors:
        raw = data.tobytes()
        header[name] = {"dtype": dtype, "shape": [len(data)], "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(path + ".tmp", path)


def main(verdicts_path, store_path, out_dir, budget, forge_version):
    cpu0, wall0 = time.process_time(), time.perf_counter()
    stages = {"read": 0.0, "assemble": 0.0, "plan": 0.0, "write": 0.0}  # wall
    cpu = {"read": 0.0, "assemble": 0.0, "plan": 0.0, "write": 0.0}  # process CPU
    counts = {"clean": 0, "realign": 0, "fork": 0}

    t, c = time.perf_counter(), time.process_time()
    inputs, seen = [], set()
    with open(verdicts_path) as f:
        for line in f:
            r = json.loads(line)
            rid = r.get("rollout_id") or r.get("id")
            if not rid or rid in seen:
                continue
            seen.add(rid)
            verdict = r.get("verdict") or {}
            reward = verdict.get("reward", r.get("reward"))
            inputs.append((rid, r.get("task_id") or rid, reward))
    db = sqlite3.connect("file:%s?mode=ro" % store_path, uri=True)
    stages["read"] += time.perf_counter() - t
    cpu["read"] += time.process_time() - c

    groups, newest_policy = {}, 0
    for rid, task, reward in inputs:
        t, c = time.perf_counter(), time.process_time()
        calls = read_calls(db, rid)
        t2, c2 = time.perf_counter(), time.process_time()
        stages["read"] += t2 - t
        cpu["read"] += c2 - c
        if calls:
            newest_policy = max([newest_policy] + [c["pv1"] for c in calls])
        if calls and reward is not None:
            good = [s for s in merge(calls, counts) if valid(s)]
            groups.setdefault(task, []).append((rid, reward, good))
        stages["assemble"] += time.perf_counter() - t2
        cpu["assemble"] += time.process_time() - c2

    t, c = time.perf_counter(), time.process_time()
    rows = []
    for task, members in groups.items():
        adv = grpo([r for _, r, _ in members])
        for (rid, r, samples), a in zip(members, adv):
            for s in samples:
                if len(s["ids"]) <= budget:
                    rows.append((task, rid, s, r, a))
    lengths = [len(s["ids"]) for _, _, s, _, _ in rows]
    bins, used = best_fit_decreasing(lengths, budget)
    stages["plan"] += time.perf_counter() - t
    cpu["plan"] += time.process_time() - c

    t, c = time.perf_counter(), time.process_time()
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "index.jsonl"), "w") as index:
        for b, items in enumerate(bins):
            ids, pos, mask, lp, adv, cu = array("i"), array("i"), array("B"), array("f"), array("f"), array("i", [0])
            rewards, row_adv = array("f"), array("f")
            uids, rids, indices, versions = [], [], [], []
            for i in items:
                task, rid, s, r, a = rows[i]
                ids.extend(s["ids"])
                pos.extend(range(len(s["ids"])))
                mask.extend(s["mask"])
                lp.extend(s["lp"])
                adv.extend([a if m else 0.0 for m in s["mask"]])
                cu.append(len(ids))
                rewards.append(r)
                row_adv.append(a)
                uids.append(task)
                rids.append(rid)
                indices.append(s["index"])
                versions.append([s["pv0"], s["pv1"]])
            path = os.path.join(out_dir, "batch-%06d.safetensors" % b)
            metadata = {"advantage": "grpo", "assembly": "merge", "batch_index": str(b),
                        "forge_version": forge_version, "format": "forge-pack-rl/1",
                        "policy_version": str(newest_policy), "policy_versions": dumps(versions),
                        "rollout_ids": dumps(rids), "rows": str(len(items)), "sample_indices": dumps(indices),
                        "token_budget": str(budget), "uids": dumps(uids)}
            write_safetensors(path, [("input_ids", "I32", ids), ("position_ids", "I32", pos),
                                     ("loss_mask", "U8", mask), ("rollout_log_probs", "F32", lp),
                                     ("advantages", "F32", adv), ("cu_seqlens", "I32", cu),
                                     ("rewards", "F32", rewards), ("row_advantages", "F32", row_adv)], metadata)
            index.write(dumps({"batch": b, "file": path, "rollout_ids": rids, "rows": len(items),
                               "token_budget": budget, "tokens": len(ids), "uids": uids,
                               "utilisation": len(ids) / budget}) + "\n")
    stages["write"] += time.perf_counter() - t
    cpu["write"] += time.process_time() - c

    print(json.dumps({"cpu_s": time.process_time() - cpu0, "wall_s": time.perf_counter() - wall0, "stages": stages, "stages_cpu": cpu,
                      "rows": len(rows), "bins": len(bins), "tokens": sum(used), **counts}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
