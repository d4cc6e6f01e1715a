#!/usr/bin/env python3
"""A generated training run of 10 policy versions for forge-verify's learning
curve (report --by policy_version), recorded through a real forge-proxy into
a real store: the verdict records carry no policy version (forge-launch's do
not), so report reads it from each rollout's first recorded call.

  learning_run.py exchanges OUT_DIR
      writes OUT_DIR/exchanges.jsonl: every call's request and answer, for
      `forge-proxy --replay` (the scripted policy).
  learning_run.py drive OUT_DIR PROXY_URL STORE
      for each version: sets the proxy's policy version (POST
      /admin/policy-version), registers each rollout's secret in the store
      (as forge-launch does), sends its calls, and writes the round's verdict
      records to OUT_DIR/round-V.jsonl; then OUT_DIR/expected.json, the
      figures per version worked out here.

Everything is a function of (version, task, attempt): version v passes task
i (1..6) in min(4, (v + i) // 3) of its 4 attempts; an attempt runs
max(1, 5 - v // 2) shell commands, the last of which reads back the file it
wrote from version 4 on (self-verification), and one more model call to say
it is done.
"""
import hashlib
import json
import os
import sqlite3
import sys
import urllib.request

VERSIONS = 10
TASKS = ["task-%d" % i for i in range(1, 7)]
ATTEMPTS = 4


def plan(version, task, attempt):
    i = int(task.split("-")[1])
    passed = attempt < min(ATTEMPTS, (version + i) // 3)
    commands = ["ls /work"] * (max(1, 5 - version // 2) - 1) + ["printf ok > /work/out"]
    if version >= 4:
        commands.append("cat /work/out")
    return commands, passed


def conversation(version, task, attempt):
    commands, _ = plan(version, task, attempt)
    history = [{"role": "user", "content": "Round %d, %s, attempt %d" % (version, task, attempt)}]
    out = []
    for n, command in enumerate(commands + [None]):
        request = {"model": "policy", "messages": list(history)}
        if command is None:
            message = {"role": "assistant", "content": "Done."}
        else:
            call_id = "call_%d_%s_%d_%d" % (version, task, attempt, n)
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "Bash", "arguments": json.dumps({"command": command})}}]}
        answer = {"id": "x", "object": "chat.completion", "model": "policy",
                  "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if command else "stop"}],
                  "usage": {"prompt_tokens": 50 + 10 * n, "completion_tokens": 12, "total_tokens": 62 + 10 * n}}
        out.append((request, answer))
        if command is not None:
            history.append(message)
            history.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
    return out


def rollouts():
    for version in range(VERSIONS):
        for task in TASKS:
            for attempt in range(ATTEMPTS):
                yield version, task, attempt, "v%d-%s-%d" % (version, task, attempt)


def exchanges(out_dir):
    with open(os.path.join(out_dir, "exchanges.jsonl"), "w") as f:
        for version, task, attempt, _ in rollouts():
            for request, answer in conversation(version, task, attempt):
                f.write(json.dumps({"schema": "forge.call/1", "client_format": "openai-chat", "request": request,
                                    "upstream_response": answer, "model": "policy"}) + "\n")


def post(url, path, secret=None, body=None):
    headers = {"Content-Type": "application/json"}
    if secret:
        headers["Authorization"] = "Bearer " + secret
    req = urllib.request.Request(url + path, data=json.dumps(body or {}).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200, r.status
        return json.load(r)


def drive(out_dir, url, store):
    db = sqlite3.connect(store, timeout=30)
    for version, task, attempt, rid in rollouts():
        secret = "secret-" + rid
        db.execute("INSERT INTO rollouts (id, run_id, task_id, attempt, harness, secret_hash, status, created_at, "
                   "updated_at) VALUES (?, ?, ?, ?, 'claude-code', ?, 'running', 0, 0)",
                   (rid, "round-%d" % version, task, attempt, hashlib.sha256(secret.encode()).hexdigest()))
    db.commit()
    db.close()
    expected = {}
    for version in range(VERSIONS):
        post(url, "/admin/policy-version?version=%d" % version)
        records = []
        for v, task, attempt, rid in rollouts():
            if v != version:
                continue
            for request, _ in conversation(version, task, attempt):
                post(url, "/v1/chat/completions", "secret-" + rid, request)
            commands, passed = plan(version, task, attempt)
            records.append({"schema": "forge.verdict/1", "rollout_id": rid, "run_id": "round-%d" % version,
                            "task_id": task, "attempt": attempt, "harness": "claude-code",
                            "verdict": {"outcome": "passed" if passed else "failed", "reward": float(passed),
                                        "threshold": 1.0}})
        with open(os.path.join(out_dir, "round-%d.jsonl" % version), "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        rates = [min(ATTEMPTS, (version + int(t.split("-")[1])) // 3) / ATTEMPTS for t in TASKS]
        commands, _ = plan(version, TASKS[0], 0)
        expected[str(version)] = {"pass_at_1": sum(rates) / len(rates), "turns": len(commands) + 1,
                                  "self_verified": version >= 4}
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    if sys.argv[1] == "exchanges":
        exchanges(sys.argv[2])
    else:
        drive(sys.argv[2], sys.argv[3], sys.argv[4])
