#!/usr/bin/python3
"""The loop's policy server: examples/loop/policy.py behind OpenAI chat completions,
with vLLM's token fields, on 127.0.0.1.

  policy_server.py --port-file FILE [--port N] (--weights FILE | --init-seed S)
                   [--teacher [--teacher-error P]] [--seed S] [--max-tokens N] [--slots N]

Requests: POST /v1/chat/completions with messages, max_tokens (or
max_completion_tokens), temperature, stream (+ stream_options.include_usage),
return_token_ids, logprobs, top_logprobs. As vLLM answers them: the response's
prompt_token_ids (in the first chunk when streaming), each choice's token_ids
(the chunk's new ids when streaming; the sampled END is the last), and
logprobs.content[] with token, logprob, bytes, top_logprobs. A prompt that fills
the context gets 400, as vLLM's "maximum context length" error.

Concurrent requests are decoded together (engine.py: continuous batching over
a KV cache, --slots at once). The logprobs are the model's (temperature 1 is the
sampling distribution), the ones each token was sampled with, as vLLM reports
them: float32, one thread, equal to the trainer's full forward up to rounding
(trainer.py check-logprobs measures the difference).

--teacher answers with the scripted solution instead of sampling ("echo N > FILE"
for the task's first turn, then DONE), ids and logprobs built the same way;
--teacher-error P makes a wrong digit in a fraction P of the answers, so the
verifier has failures to filter. GET /v1/models, GET /healthz,
POST /admin/load-weights {"path": FILE, "teacher": BOOL} swaps the weights
between calls (and with "teacher" turns the scripted answers on or off),
GET /admin/state says which weights serve."""
import argparse
import json
import os
import random
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

import engine
import policy

LOCK = threading.Lock()  # the call count, the teacher's random numbers, the served weights' name
STATE = {"model": None, "weights": None, "meta": {}, "calls": 0}
ARGS = None
ENGINE = None


class BadRequest(Exception):
    pass


def teacher_answer(messages, rng):
    if any(m.get("role") == "assistant" for m in messages):
        return "DONE"
    users = [policy.content_text(m.get("content")) for m in messages if m.get("role") == "user"]
    found = re.search(r"number (\d+) into the file (\S+?)\.?\s*$", users[0] if users else "")
    if not found:
        return "DONE"
    number = found.group(1)
    if rng.random() < ARGS.teacher_error:
        i = rng.randrange(len(number))
        number = number[:i] + str((int(number[i]) + 1) % 10) + number[i + 1:]
    return "echo %s > %s" % (number, found.group(2))


def generate(body):
    """(the call's number, the engine's answer: prompt ids, completion ids, logprobs, alternatives)
    for a request body."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: expected a non-empty array")
    try:
        prompt = policy.chat_prompt(messages)
    except (ValueError, AttributeError) as e:
        raise BadRequest("messages: %s" % e)
    max_len = STATE["model"].config["max_len"]
    if len(prompt) >= max_len:
        raise BadRequest("This model's maximum context length is %d tokens. However, you requested %d tokens "
                         "in the messages." % (max_len, len(prompt)))
    want = next((body[k] for k in ("max_completion_tokens", "max_tokens") if body.get(k) is not None), ARGS.max_tokens)
    if not isinstance(want, int) or isinstance(want, bool) or want < 1:
        raise BadRequest("max_tokens: expected a positive integer, got %s" % json.dumps(want))
    temperature = body.get("temperature", 1.0)
    if not isinstance(temperature, (int, float)):
        raise BadRequest("temperature: expected a number")
    top = body.get("top_logprobs") or 0
    if not isinstance(top, int) or not 0 <= top <= policy.VOCAB:
        raise BadRequest("top_logprobs: expected an integer from 0 to %d" % policy.VOCAB)
    room = min(want, max_len - len(prompt))
    fixed = None
    with LOCK:
        STATE["calls"] += 1
        call = STATE["calls"]
        if ARGS.teacher:
            fixed = (list(teacher_answer(messages, STATE["rng"]).encode()) + [policy.END])[:room]
    return call, ENGINE.generate(engine.Request(prompt, room, float(temperature), top, fixed))


def logprob_entry(token, logprob, alternatives):
    text = policy.token_text(token)
    top = [{"token": policy.token_text(t), "logprob": v, "bytes": list(policy.token_text(t).encode())}
           for t, v in alternatives]
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": top}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass  # the loop's logs stay readable; errors go back to the client

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        for name, value in (("Content-Type", "application/json"), ("Content-Length", str(len(data)))):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, message, kind="BadRequestError"):
        self.send_json(status, {"object": "error", "message": message, "type": kind, "param": None, "code": status})

    def do_GET(self):
        if self.path == "/healthz" or self.path == "/health":
            self.send_json(200, {"status": "ok"})
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "policy", "object": "model", "owned_by": "forge",
                                                            "max_model_len": STATE["model"].config["max_len"]}]})
        elif self.path == "/admin/state":
            self.send_json(200, {"weights": STATE["weights"], "calls": STATE["calls"], "meta": STATE["meta"],
                                 "teacher": ARGS.teacher})
        else:
            self.error(404, "no such path: %s" % self.path, "NotFoundError")

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            return json.loads(self.rfile.read(length) or b"null")
        except ValueError as e:
            raise BadRequest("request body is not JSON: %s" % e)

    def do_POST(self):
        try:
            body = self.read_body()
            if not isinstance(body, dict):
                raise BadRequest("request body: expected a JSON object")
            if self.path == "/admin/load-weights":
                self.load_weights(body)
            elif self.path in ("/v1/chat/completions", "/chat/completions"):
                self.chat(body)
            else:
                self.error(404, "no such path: %s" % self.path, "NotFoundError")
        except BadRequest as e:
            self.error(400, str(e))

    def load_weights(self, body):
        path, teacher = body.get("path"), body.get("teacher")
        if path is None and teacher is None:
            raise BadRequest("expected \"path\" (a weights file) and/or \"teacher\" (true or false)")
        if path is not None and not isinstance(path, str) or teacher is not None and not isinstance(teacher, bool):
            raise BadRequest("path: expected a string; teacher: expected true or false")
        loaded = {}
        if path is not None:
            try:
                model, meta = policy.load_policy(path)
            except (OSError, ValueError, KeyError, RuntimeError) as e:
                raise BadRequest("%s: cannot load weights: %s" % (path, e))
            loaded = {"model": model, "weights": path, "meta": meta}
        if loaded:
            ENGINE.swap(loaded["model"])
        with LOCK:
            STATE.update(loaded)
            if teacher is not None:
                ARGS.teacher = teacher
        self.send_json(200, {"weights": STATE["weights"], "meta": STATE["meta"], "teacher": ARGS.teacher})

    def chat(self, body):
        call, answer = generate(body)
        prompt, completion = answer.prompt, answer.completion
        finish = "stop" if completion and completion[-1] == policy.END else "length"
        want_ids = bool(body.get("return_token_ids"))
        want_lp = bool(body.get("logprobs"))
        head = {"id": "chatcmpl-%d" % call, "created": int(time.time()), "model": body.get("model", "policy")}
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(completion),
                 "total_tokens": len(prompt) + len(completion)}
        alternatives = answer.alternatives or [[]] * len(completion)
        entries = [logprob_entry(*e) for e in zip(completion, answer.logprobs, alternatives)]
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": policy.decode(completion)},
                      "logprobs": {"content": entries} if want_lp else None, "finish_reason": finish,
                      "stop_reason": None}
            resp = dict(head, object="chat.completion", choices=[choice], usage=usage)
            if want_ids:
                choice["token_ids"] = completion
                resp["prompt_token_ids"] = prompt
            self.send_json(200, resp)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        head["object"] = "chat.completion.chunk"
        first = dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                     "logprobs": None, "finish_reason": None}])
        if want_ids:
            first["prompt_token_ids"] = prompt
            first["choices"][0]["token_ids"] = []
        self.chunk(first)
        for i, token in enumerate(completion):
            last = i == len(completion) - 1
            c = {"index": 0, "delta": {"content": policy.decode([token])},
                 "logprobs": {"content": [entries[i]]} if want_lp else None,
                 "finish_reason": finish if last else None}
            if want_ids:
                c["token_ids"] = [token]
            self.chunk(dict(head, choices=[c]))
        if (body.get("stream_options") or {}).get("include_usage"):
            self.chunk(dict(head, choices=[], usage=usage))
        self.chunk("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def chunk(self, obj):
        data = ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def main():
    global ARGS, ENGINE
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", required=True, help="the bound port is written here once listening")
    p.add_argument("--weights", help="a weights file written by the trainer")
    p.add_argument("--init-seed", type=int, default=0, help="without --weights: a fresh model from this seed")
    p.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    p.add_argument("--max-tokens", type=int, default=32, help="completion length when the request sets none")
    p.add_argument("--teacher", action="store_true")
    p.add_argument("--teacher-error", type=float, default=0.0)
    p.add_argument("--slots", type=int, default=8, help="completions decoded at once (more wait their turn)")
    ARGS = p.parse_args()
    torch.set_num_threads(1)
    policy.keep_freed_memory()
    if ARGS.weights:
        try:
            model, meta = policy.load_policy(ARGS.weights)
        except (OSError, ValueError, KeyError) as e:
            sys.exit("policy_server: %s: cannot load weights: %s" % (ARGS.weights, e))
        STATE.update(model=model, weights=ARGS.weights, meta=meta)
    else:
        STATE.update(model=policy.new_policy(ARGS.init_seed), meta={"init_seed": str(ARGS.init_seed)})
    STATE["rng"] = random.Random(ARGS.seed)
    ENGINE = engine.Engine(STATE["model"], torch.Generator().manual_seed(ARGS.seed), ARGS.slots)
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    # The port file appears whole, once the server listens.
    temporary = "%s.%d" % (ARGS.port_file, os.getpid())
    with open(temporary, "w") as f:
        print(server.server_address[1], file=f)
    os.replace(temporary, ARGS.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
