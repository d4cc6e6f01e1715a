#!/usr/bin/env python3
"""Two hand-made runs for forge-verify's report/compare tests, recorded
through a real forge-proxy into a real store.

  behaviour_runs.py exchanges OUT_DIR
      writes OUT_DIR/exchanges.jsonl: every call's request and answer, for
      `forge-proxy --replay` (the scripted policy).
  behaviour_runs.py drive OUT_DIR PROXY_URL STORE
      registers each rollout's secret in the store (as forge-launch does),
      sends every call through the proxy with that secret, and writes
      OUT_DIR/a.jsonl and OUT_DIR/b.jsonl (the verdict records) and
      OUT_DIR/expected.json (the behaviour figures worked out here).

Run A is Claude Code (model ckpt-sft) working through Bash; run B is opencode
(model ckpt-rl) using its dedicated write/read tools and running the tests.
Everything is a function of (run, task, attempt), so the figures are known.
"""
import hashlib
import json
import os
import sqlite3
import sys
import time
import urllib.request

TASKS = ["t%d" % i for i in range(1, 7)]
ATTEMPTS = 3


def plan(run, task, attempt):
    """The tool calls of one attempt, its outcome, and what it shows."""
    i = int(task[1:])
    path = "/work/%s.py" % task
    if run == "a":
        calls = [("Bash", {"command": "ls /work"}, "x.py"),
                 ("Bash", {"command": "printf 'ok' > %s" % path}, "")]
        failed = (i + attempt) % 3 == 0
        if failed:
            calls.insert(1, ("Bash", {"command": "pyhton %s" % path}, "bash: pyhton: command not found"))
        verified = attempt == 0
        if verified:
            calls.append(("Bash", {"command": "cat %s" % path}, "ok"))
        passed = i <= 3 and attempt != 2
    else:
        calls = [("read", {"filePath": "/work/README"}, "do it"),
                 ("write", {"filePath": path, "content": "ok"}, "wrote")]
        failed = i == 6
        if failed:
            calls.insert(1, ("bash", {"command": "pytest -q"}, "Error: no tests ran"))
        verified = attempt != 1
        if verified:
            calls.append(("bash", {"command": "pytest -q"}, "1 passed"))
        passed = i <= 5
    return calls, failed, verified, passed


def conversation(run, task, attempt):
    """[(request, answer)] for one attempt: one call per tool call, then a final answer."""
    model = "ckpt-sft" if run == "a" else "ckpt-rl"
    calls, _, _, _ = plan(run, task, attempt)
    history = [{"role": "user", "content": "Task %s, attempt %d of run %s" % (task, attempt, run)}]
    out = []
    for n, (name, args, result) in enumerate(calls + [(None, None, None)]):
        request = {"model": model, "messages": list(history)}
        if name is None:
            message = {"role": "assistant", "content": "Done."}
        else:
            call_id = "call_%s_%s_%d_%d" % (run, task, attempt, n)
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}
        answer = {"id": "x", "object": "chat.completion", "model": model,
                  "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if name else "stop"}],
                  "usage": {"prompt_tokens": 100 + 10 * n, "completion_tokens": 20, "total_tokens": 120 + 10 * n}}
        out.append((request, answer))
        if name is not None:
            history.append(message)
            history.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return out


def rollouts():
    for run in ("a", "b"):
        for task in TASKS:
            for attempt in range(ATTEMPTS):
                yield run, task, attempt, "%s-%s-%d" % (run, task, attempt)


def exchanges(out_dir):
    with open(os.path.join(out_dir, "exchanges.jsonl"), "w") as f:
        for run, task, attempt, _ in rollouts():
            for request, answer in conversation(run, task, attempt):
                f.write(json.dumps({"schema": "forge.call/1", "client_format": "openai-chat", "request": request,
                                    "upstream_response": answer, "model": request["model"]}) + "\n")


def post(url, secret, body):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + secret, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200, r.status
        return json.load(r)


def drive(out_dir, url, store):
    db = sqlite3.connect(store, timeout=30)
    for run, task, attempt, rid in rollouts():
        secret = "secret-" + rid
        db.execute("INSERT INTO rollouts (id, run_id, task_id, attempt, harness, secret_hash, status, created_at, "
                   "updated_at) VALUES (?, ?, ?, ?, ?, ?, 'running', 0, 0)",
                   (rid, "run-" + run, task, attempt, "claude-code" if run == "a" else "opencode",
                    hashlib.sha256(secret.encode()).hexdigest()))
        db.commit()
    db.close()
    expected = {}
    records = {"a": [], "b": []}
    for run, task, attempt, rid in rollouts():
        for request, answer in conversation(run, task, attempt):
            got = post(url, "secret-" + rid, request)
            names = lambda m: [c["function"]["name"] for c in m.get("tool_calls") or []]
            assert names(got["choices"][0]["message"]) == names(answer["choices"][0]["message"]), (got, answer)
        calls, failed, verified, passed = plan(run, task, attempt)
        harness = "claude-code" if run == "a" else "opencode"
        outcome = "passed" if passed else "failed"
        records[run].append({"schema": "forge.verdict/1", "rollout_id": rid, "run_id": "run-" + run, "task_id": task,
                             "attempt": attempt, "harness": harness,
                             "verdict": {"outcome": outcome, "reward": 1.0 if passed else 0.0}})
        e = expected.setdefault(harness, {"trials": 0, "calls": 0, "shell": 0, "edited": 0, "verified": 0,
                                          "with_failures": 0, "recovered": 0, "turns": 0, "completion_tokens": 0})
        e["trials"] += 1
        e["calls"] += len(calls)
        e["shell"] += sum(1 for name, _, _ in calls if name in ("Bash", "bash"))
        e["edited"] += 1
        e["verified"] += int(verified)
        e["with_failures"] += int(failed)
        e["recovered"] += int(failed and passed)
        e["turns"] += len(calls) + 1
        e["completion_tokens"] += 20 * (len(calls) + 1)
    for run in ("a", "b"):
        with open(os.path.join(out_dir, run + ".jsonl"), "w") as f:
            for r in records[run]:
                f.write(json.dumps(r) + "\n")
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    if sys.argv[1] == "exchanges":
        exchanges(sys.argv[2])
    else:
        drive(sys.argv[2], sys.argv[3], sys.argv[4])
