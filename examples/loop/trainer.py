#!/usr/bin/python3
"""The loop's trainer: reads what forge-pack writes and updates examples/loop/policy.py.

  trainer.py init --seed S --out W                  a fresh model
  trainer.py sft  --weights W --data SFT.jsonl --steps N --out W2 [--resume S] [--save-state S2]
                                                    forge-pack --format sft-tokens rows
  trainer.py rl   --weights W --index INDEX.jsonl --out W2
                                                    forge-pack --format rl micro-batches
  trainer.py check-logprobs --weights W --index INDEX.jsonl [--tolerance 1e-4]

sft: cross-entropy on the tokens whose loss_mask is 1 (the labels are the ids
there, -100 elsewhere), minibatches drawn with the seed, Adam. --save-state
keeps Adam's moments and the minibatch sampler beside the weights written, and
--resume goes on from them: run.sh trains in pieces, measures each piece's
checkpoint as it measures the held-out split, and goes back to an earlier
piece when one overshoots.

rl: the policy-gradient loss of GRPO / Dr. GRPO / RLOO (which one is forge-pack's
--advantage; the trainer takes the per-token advantages as written) with PPO's
clipped importance ratio exp(logp_new - rollout_log_probs) on the tokens whose
loss_mask is 1. --updates K optimizer steps over the round's micro-batches (the
first sees ratio 1; later ones are clipped to [1 - eps, 1 + eps]); --loss-agg
token-mean (veRL's default) or seq-mean-token-sum-norm (Dr. GRPO's constant
normaliser). Before the first update it compares its log-probabilities with
the recorded ones (check-logprobs does only that) and reports the largest
difference, over single-call rows and merged multi-call rows.

Each command prints one JSON line on stdout; progress goes to stderr.
Exit status: 0 ok, 1 check-logprobs over the tolerance, 65 bad input, 66 missing input."""
import argparse
import json
import os
import random
import sys

import numpy as np
import torch

import policy


def die(status, message):
    print("trainer: " + message, file=sys.stderr)
    sys.exit(status)


def read_jsonl(path):
    if not os.path.exists(path):
        die(66, "%s: no such file" % path)
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                die(65, "%s:%d: not JSON: %s" % (path, n, e))
    return rows


def load_sft(path):
    rows = []
    for n, r in enumerate(read_jsonl(path), 1):
        ids, mask = r.get("input_ids"), r.get("loss_mask")
        if not isinstance(ids, list) or not isinstance(mask, list) or len(ids) != len(mask):
            die(65, "%s:%d: expected input_ids and loss_mask of equal length" % (path, n))
        labels = r.get("labels")
        if labels is not None and any((l != -100) != bool(m) or (m and l != i)
                                      for i, l, m in zip(ids, labels, mask)):
            die(65, "%s:%d: labels disagree with input_ids and loss_mask" % (path, n))
        rows.append((ids, mask))
    return rows


def load_rl(index_path):
    """Rows of every micro-batch of the index: dicts of ids, mask, old log-probs, advantages."""
    base = os.path.dirname(os.path.abspath(index_path))
    rows = []
    for n, entry in enumerate(read_jsonl(index_path), 1):
        name = entry.get("file")
        if not isinstance(name, str):
            die(65, "%s:%d: no \"file\"" % (index_path, n))
        # forge-pack writes --out-dir/batch-N.safetensors: relative to where it ran,
        # which is usually here, else next to the index.
        path = name
        if not os.path.isabs(name) and not os.path.exists(name):
            path = os.path.join(base, os.path.basename(name))
        if not os.path.exists(path):
            die(66, "%s:%d: %s: no such file" % (index_path, n, path))
        try:
            t, meta = policy.read_safetensors(path)
        except ValueError as e:
            die(65, str(e))
        need = ("input_ids", "position_ids", "loss_mask", "rollout_log_probs", "advantages", "cu_seqlens")
        missing = [k for k in need if k not in t]
        if missing:
            die(65, "%s: missing tensors %s" % (path, ", ".join(missing)))
        cu = t["cu_seqlens"]
        uids = json.loads(meta.get("uids", "[]"))
        for i in range(len(cu) - 1):
            a, b = int(cu[i]), int(cu[i + 1])
            if not np.array_equal(t["position_ids"][a:b], np.arange(b - a)):
                die(65, "%s: row %d: position_ids do not restart at 0" % (path, i))
            mask = t["loss_mask"][a:b].astype(bool)
            rows.append({"ids": t["input_ids"][a:b].astype(np.int64).tolist(), "mask": mask,
                         "old": torch.from_numpy(t["rollout_log_probs"][a:b].copy()),
                         "adv": torch.from_numpy(t["advantages"][a:b].copy()),
                         "uid": uids[i] if i < len(uids) else None,
                         "reward": float(t["rewards"][i]) if "rewards" in t else None,
                         "row_adv": float(t["row_advantages"][i]) if "row_advantages" in t else None,
                         "calls": int(np.sum(np.diff(np.concatenate([[0], mask.astype(np.int8)])) == 1))})
    return rows


def batches(rows, size):
    for i in range(0, len(rows), size):
        yield rows[i:i + size]


def logprob_agreement(model, rows, size=16):
    """Largest |trainer logprob - recorded logprob| over completion tokens, single and merged rows."""
    worst = {"single": 0.0, "merged": 0.0}
    count = {"single": 0, "merged": 0}
    tokens = 0
    with torch.no_grad():
        for group in batches(rows, size):
            new = policy.token_logprobs(model, [r["ids"] for r in group])
            for j, r in enumerate(group):
                kind = "merged" if r["calls"] > 1 else "single"
                m = torch.from_numpy(r["mask"])
                diff = (new[j, :len(r["ids"])][m] - r["old"][m]).abs()
                if len(diff):
                    worst[kind] = max(worst[kind], float(diff.max()))
                count[kind] += 1
                tokens += int(m.sum())
    return {"max_abs_diff": max(worst.values()), "max_abs_diff_single": worst["single"],
            "max_abs_diff_merged": worst["merged"], "rows_single": count["single"],
            "rows_merged": count["merged"], "tokens": tokens}


def rl_loss(model, group, clip, norm):
    """Clipped policy-gradient loss of a micro-batch, its token sum divided by norm."""
    new = policy.token_logprobs(model, [r["ids"] for r in group])
    total, clipped = 0.0, 0
    for j, r in enumerate(group):
        m = torch.from_numpy(r["mask"])
        logp = new[j, :len(r["ids"])][m]
        ratio = torch.exp(logp - r["old"][m])
        adv = r["adv"][m]
        per_token = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip))
        clipped += int(((ratio < 1 - clip) | (ratio > 1 + clip)).sum())
        total = total + per_token.sum() / norm
    return total, clipped


def advantage_mismatches(rows):
    """Rows whose advantage disagrees with their reward: within a task's group, pairs
    ordered one way by reward and the other by advantage (or equal rewards with
    unequal advantages), and, for rewards in [0, 1], a reward of 1 with A < 0 or of 0
    with A > 0. forge-pack's baseline also counts attempts dropped from the batch
    (a truncated attempt is still an outcome), so a group's packed rows alone need
    not average to 0; these two hold whatever the baseline."""
    groups, order, sign = {}, 0, 0
    for r in rows:
        groups.setdefault(r["uid"], []).append((r["reward"], r["row_adv"]))
        sign += int(r["reward"] >= 1 and r["row_adv"] < 0 or r["reward"] <= 0 and r["row_adv"] > 0)
    for group in groups.values():
        for i, (ri, ai) in enumerate(group):
            for rj, aj in group[i + 1:]:
                order += int((ri - rj) * (ai - aj) < 0 or (ri == rj and abs(ai - aj) > 1e-6))
    return order, sign


def update_signal(model, rows, size=16):
    """Whether the round's data says what it should and the update moved the policy that way.

    Before: advantages against rewards (advantage_mismatches) and against the mask
    (the row's advantage on mask-1 tokens, 0 elsewhere: `advantage_off_mask` counts
    the tokens that are not). After: the mean change of log-probability (new -
    recorded) on the completion tokens of rows with A > 0 and of rows with A < 0,
    per token and per row's sum: the first should rise, the second fall."""
    out = {"rows_positive": 0, "rows_negative": 0, "advantage_off_mask": 0}
    if all(r["reward"] is not None and r["row_adv"] is not None for r in rows):
        out["order_mismatches"], out["sign_mismatches"] = advantage_mismatches(rows)
    sums = {"positive": [0.0, 0], "negative": [0.0, 0]}  # sum of the tokens' changes, tokens
    with torch.no_grad():
        for group in batches(rows, size):
            new = policy.token_logprobs(model, [r["ids"] for r in group])
            for j, r in enumerate(group):
                m = torch.from_numpy(r["mask"])
                a = r["row_adv"] if r["row_adv"] is not None else float(r["adv"][m][0]) if m.any() else 0.0
                out["advantage_off_mask"] += int((r["adv"][m] != a).sum()) + int((r["adv"][~m] != 0).sum())
                if a == 0:
                    continue
                kind = "positive" if a > 0 else "negative"
                out["rows_" + kind] += 1
                sums[kind][0] += float((new[j, :len(r["ids"])][m] - r["old"][m]).sum())
                sums[kind][1] += int(m.sum())
    for kind, (total, count) in sums.items():
        out["token_delta_" + kind] = total / count if count else None
        out["row_delta_" + kind] = total / out["rows_" + kind] if out["rows_" + kind] else None
    return out


def cmd_init(a):
    torch.manual_seed(a.seed)
    model = policy.new_policy(a.seed)
    policy.save_policy(model, a.out, {"stage": "init", "seed": a.seed})
    print(json.dumps({"out": a.out, "parameters": sum(p.numel() for p in model.parameters())}))


def cmd_sft(a):
    model, _ = policy.load_policy(a.weights)
    rows = load_sft(a.data)
    if not rows:
        die(65, "%s: no rows" % a.data)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    rng, done = random.Random(a.seed), 0
    if a.resume:  # go on where the call that wrote --weights stopped
        try:
            state = torch.load(a.resume)
            opt.load_state_dict(state["optimizer"])
            rng.setstate(state["rng"])
            done = state["step"]
        except (OSError, KeyError, ValueError, RuntimeError) as e:
            die(65, "%s: not a state this trainer wrote: %s" % (a.resume, e))
    losses = []
    for step in range(done + 1, done + a.steps + 1):
        model.train()
        group = [rows[rng.randrange(len(rows))] for _ in range(a.batch)]
        logp = policy.token_logprobs(model, [ids for ids, _ in group])
        mask = torch.zeros_like(logp, dtype=torch.bool)
        for j, (_, m) in enumerate(group):
            mask[j, :len(m)] = torch.as_tensor(m, dtype=torch.bool)
        loss = -logp[mask].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
        if step % 20 == 0:
            print("trainer: sft step %d loss %.4f" % (step, loss), file=sys.stderr)
    model.eval()
    step = done + a.steps
    policy.save_policy(model, a.out, {"stage": "sft", "steps": step})
    if a.save_state:
        torch.save({"optimizer": opt.state_dict(), "rng": rng.getstate(), "step": step}, a.save_state + ".tmp")
        os.replace(a.save_state + ".tmp", a.save_state)
    print(json.dumps({"out": a.out, "rows": len(rows), "steps": step, "first_loss": losses[0],
                      "last_loss": losses[-1]}))


def cmd_rl(a):
    model, _ = policy.load_policy(a.weights)
    rows = load_rl(a.index)
    if not rows:
        die(65, "%s: no rows to train on" % a.index)
    report = {"agreement": logprob_agreement(model, rows)}
    torch.manual_seed(a.seed)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    tokens = sum(int(r["mask"].sum()) for r in rows)
    longest = max(len(r["ids"]) for r in rows)
    losses = []
    for update in range(a.updates):
        opt.zero_grad()
        total, clipped = 0.0, 0
        for group in batches(rows, a.micro_batch):
            # token-mean: every trainable token of the round weighs the same; Dr. GRPO's
            # seq-mean-token-sum-norm: token sums over (rows x a constant length).
            norm = tokens if a.loss_agg == "token-mean" else len(rows) * longest
            loss, c = rl_loss(model, group, a.clip, norm)
            loss.backward()
            total += float(loss)
            clipped += c
        opt.step()
        losses.append({"loss": total, "clipped_tokens": clipped})
        print("trainer: rl update %d/%d loss %.5f clipped %d/%d tokens" % (update + 1, a.updates, total, clipped,
                                                                            tokens), file=sys.stderr)
    model.eval()
    policy.save_policy(model, a.out, {"stage": "rl", "updates": a.updates})
    report.update(out=a.out, rows=len(rows), tokens=tokens, updates=losses, signal=update_signal(model, rows))
    print(json.dumps(report))


def cmd_check(a):
    model, _ = policy.load_policy(a.weights)
    rows = load_rl(a.index)
    if not rows:
        die(65, "%s: no rows" % a.index)
    report = logprob_agreement(model, rows)
    report["tolerance"] = a.tolerance
    report["ok"] = report["max_abs_diff"] <= a.tolerance
    print(json.dumps(report))
    sys.exit(0 if report["ok"] else 1)


def main():
    p = argparse.ArgumentParser(description="forge's example trainer (examples/loop/README.md)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("init")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True)
    s = sub.add_parser("sft")
    for name in ("--weights", "--data", "--out"):
        s.add_argument(name, required=True)
    s.add_argument("--steps", type=int, default=100)
    s.add_argument("--batch", type=int, default=16)
    s.add_argument("--lr", type=float, default=3e-3)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--resume", help="the state --save-state wrote with --weights: the steps go on from it")
    s.add_argument("--save-state", help="write the optimizer's and the minibatch sampler's state here")
    s = sub.add_parser("rl")
    for name in ("--weights", "--index", "--out"):
        s.add_argument(name, required=True)
    s.add_argument("--updates", type=int, default=4)
    s.add_argument("--micro-batch", type=int, default=32)
    s.add_argument("--clip", type=float, default=0.2)
    s.add_argument("--lr", type=float, default=1e-3)
    s.add_argument("--loss-agg", choices=["token-mean", "seq-mean-token-sum-norm"], default="token-mean")
    s.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("check-logprobs")
    s.add_argument("--weights", required=True)
    s.add_argument("--index", required=True)
    s.add_argument("--tolerance", type=float, default=1e-4)
    a = p.parse_args()
    torch.set_num_threads(1)
    policy.keep_freed_memory()
    for name in ("weights", "data", "index"):
        if getattr(a, name, None) and not os.path.exists(getattr(a, name)):
            die(66, "%s: no such file" % getattr(a, name))
    {"init": cmd_init, "sft": cmd_sft, "rl": cmd_rl, "check-logprobs": cmd_check}[a.command](a)


if __name__ == "__main__":
    main()
