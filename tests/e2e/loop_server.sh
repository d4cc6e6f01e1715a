#!/usr/bin/env bash
# The loop's policy server (examples/loop/policy_server.py, engine.py): several
# requests decoded at once over the KV cache answer as one at a time would.
# Checks, against a server with 3 slots and 8 requests at once:
#   - every answer has vLLM's fields: prompt_token_ids (the chat template's
#     ids), choices[0].token_ids (END last when finished), one logprobs.content
#     entry per token; max_tokens is kept;
#   - each token's recorded logprob equals the trainer's full forward
#     (policy.token_logprobs over prompt + completion) within 1e-4;
#   - greedy decoding (temperature 0) gives the same completion alone and in a
#     batch with others, and equals the full forward's argmax at every step;
#     top_logprobs lists that token first;
#   - streaming carries the same ids and logprobs as a plain answer would;
#   - bad requests (not JSON, no messages, max_tokens 0, a bad top_logprobs, a
#     prompt over the context, a weights file that is not one) get 400 naming
#     the field, and the server goes on answering;
#   - new weights loaded while requests are in flight: those finish, the next
#     answers come from the new weights.
# Needs Debian's python3-torch: exits 77 (skipped) without it.
set -euo pipefail
SRC="${FORGE_SRC:?}"
py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  echo "SKIP: $py cannot import torch and numpy (apt-get install python3-torch)"; exit 77
fi
out=$(mktemp -d /tmp/forge-loop-server.XXXXXX)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT
here=$SRC/examples/loop
"$py" "$here/trainer.py" init --seed 5 --out "$out/a.safetensors" >/dev/null
"$py" "$here/trainer.py" init --seed 6 --out "$out/b.safetensors" >/dev/null
"$py" "$here/policy_server.py" --port-file "$out/port" --weights "$out/a.safetensors" --seed 1 --slots 3 \
  2>"$out/server.log" &
pid=$!
for _ in $(seq 300); do [ -s "$out/port" ] && break; sleep 0.1; done
[ -s "$out/port" ] || { echo "FAIL: the server did not start: $(cat "$out/server.log")"; exit 1; }

LOOP_DIR=$here PORT=$(cat "$out/port") WEIGHTS_A=$out/a.safetensors WEIGHTS_B=$out/b.safetensors "$py" - <<'PY'
import concurrent.futures as cf
import http.client
import json
import os
import sys

import torch

sys.path.insert(0, os.environ["LOOP_DIR"])
import policy

torch.set_num_threads(1)
PORT = int(os.environ["PORT"])
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


def post(path, body, raw=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=300)
    c.request("POST", path, raw if raw is not None else json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, data


def chat(task, **extra):
    body = {"messages": [{"role": "system", "content": "You are an agent."},
                         {"role": "user", "content": "Write the number %d into the file out.txt." % task}],
            "return_token_ids": True, "logprobs": True, "max_tokens": 24}
    body.update(extra)
    status, data = post("/v1/chat/completions", body)
    check(status == 200, "task %d: status %d: %s" % (task, status, data[:200]))
    return body, json.loads(data) if status == 200 else None


def full_forward(model, prompt, completion):
    return policy.token_logprobs(model, [prompt + completion])[0, len(prompt):]


model_a, _ = policy.load_policy(os.environ["WEIGHTS_A"])
model_b, _ = policy.load_policy(os.environ["WEIGHTS_B"])

# 8 requests at once, 3 slots: every answer has vLLM's fields and the trainer's logprobs.
with cf.ThreadPoolExecutor(8) as pool:
    answers = list(pool.map(lambda t: chat(1000 + t), range(8)))
worst = 0.0
for body, resp in answers:
    if resp is None:
        continue
    choice = resp["choices"][0]
    prompt, ids = resp["prompt_token_ids"], choice["token_ids"]
    check(prompt == policy.chat_prompt(body["messages"]), "prompt_token_ids are not the chat template's ids")
    check(1 <= len(ids) <= 24, "max_tokens 24 not kept: %d tokens" % len(ids))
    check((choice["finish_reason"] == "stop") == (ids[-1] == policy.END), "finish_reason disagrees with END")
    recorded = [e["logprob"] for e in choice["logprobs"]["content"]]
    check(len(recorded) == len(ids), "one logprobs entry per token")
    with torch.no_grad():
        diff = (full_forward(model_a, prompt, ids) - torch.tensor(recorded)).abs().max()
    worst = max(worst, float(diff))
check(worst <= 1e-4, "recorded logprobs vs the trainer's forward: max abs diff %.2e > 1e-4" % worst)
print("8 concurrent requests, 3 slots: recorded vs trainer logprobs, max abs diff %.2e" % worst)

# Greedy: alone and batched with sampled requests, the same tokens, each the full forward's argmax.
_, alone = chat(2001, temperature=0)
with cf.ThreadPoolExecutor(4) as pool:
    batched = list(pool.map(lambda t: chat(2001 if t == 0 else 3000 + t, temperature=0 if t == 0 else 1.0), range(4)))
greedy = batched[0][1]["choices"][0]["token_ids"]
check(alone["choices"][0]["token_ids"] == greedy, "greedy completion differs alone and in a batch")
with torch.no_grad():
    ids = alone["prompt_token_ids"] + greedy
    logits = policy.masked_log_softmax(model_a(torch.as_tensor([ids])))[0]
    argmax = [int(logits[len(alone["prompt_token_ids"]) - 1 + i].argmax()) for i in range(len(greedy))]
check(argmax == greedy, "greedy tokens are not the full forward's argmax")
_, top = chat(2001, temperature=0, top_logprobs=3)
entries = top["choices"][0]["logprobs"]["content"]
check(all(len(e["top_logprobs"]) == 3 and e["top_logprobs"][0]["token"] == e["token"]
          and abs(e["top_logprobs"][0]["logprob"] - e["logprob"]) < 1e-6 for e in entries),
      "top_logprobs: 3 alternatives a token, the greedy token first with its own logprob")

# Streaming: the chunks' ids and logprobs make the same answer's fields.
c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=300)
body = {"messages": [{"role": "user", "content": "Write the number 4321 into the file ans.txt."}], "stream": True,
        "return_token_ids": True, "logprobs": True, "temperature": 0, "max_tokens": 16,
        "stream_options": {"include_usage": True}}
c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
events = [l[6:] for l in c.getresponse().read().decode().splitlines() if l.startswith("data: ")]
check(events[-1] == "[DONE]", "stream does not end with [DONE]")
chunks = [json.loads(e) for e in events[:-1]]
streamed = [i for ch in chunks for choice in ch["choices"] for i in choice.get("token_ids", [])]
lps = [e["logprob"] for ch in chunks for choice in ch["choices"] if choice.get("logprobs")
       for e in choice["logprobs"]["content"]]
_, plain = chat(0, messages=body["messages"], temperature=0, max_tokens=16)
check(chunks[0]["prompt_token_ids"] == plain["prompt_token_ids"], "streamed prompt_token_ids differ")
check(streamed == plain["choices"][0]["token_ids"], "streamed token_ids differ from the plain answer's")
check(len(lps) == len(streamed), "streamed logprobs: one per token")
check(chunks[-1].get("usage", {}).get("completion_tokens") == len(streamed), "usage chunk's completion_tokens")

# Bad requests: 400 naming what is wrong; the server goes on.
long_text = "x" * 800
for what, raw, body, needle in (
        ("not JSON", "{not json", None, "not JSON"),
        ("no messages", None, {"max_tokens": 3}, "messages"),
        ("max_tokens 0", None, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, "max_tokens"),
        ("top_logprobs", None, {"messages": [{"role": "user", "content": "hi"}], "top_logprobs": "a"}, "top_logprobs"),
        ("a role", None, {"messages": [{"role": "robot", "content": "hi"}]}, "role"),
        ("context", None, {"messages": [{"role": "user", "content": long_text}]}, "maximum context length")):
    status, data = post("/v1/chat/completions", body, raw)
    check(status == 400 and needle in data, "%s: expected 400 naming %r, got %d %s" % (what, needle, status, data[:200]))
status, data = post("/admin/load-weights", {"path": os.environ["WEIGHTS_A"] + ".missing"})
check(status == 400 and "cannot load weights" in data, "a missing weights file: %d %s" % (status, data[:200]))
check(chat(5)[1] is not None, "the server stopped answering after bad requests")

# New weights while requests are in flight: those finish; later answers come from the new weights.
with cf.ThreadPoolExecutor(6) as pool:
    flying = [pool.submit(chat, 6000 + t, max_tokens=32) for t in range(5)]
    status, data = post("/admin/load-weights", {"path": os.environ["WEIGHTS_B"]})
    check(status == 200, "load-weights: %d %s" % (status, data[:200]))
    check(all(f.result()[1] is not None for f in flying), "a request in flight when the weights changed failed")
_, after = chat(7000)
with torch.no_grad():
    ids = after["choices"][0]["token_ids"]
    recorded = torch.tensor([e["logprob"] for e in after["choices"][0]["logprobs"]["content"]])
    diff_b = float((full_forward(model_b, after["prompt_token_ids"], ids) - recorded).abs().max())
check(diff_b <= 1e-4, "after load-weights the answer is not the new weights' (max abs diff %.2e)" % diff_b)
sys.exit(1 if failures else 0)
PY
echo PASS
