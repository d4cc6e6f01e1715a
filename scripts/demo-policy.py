#!/usr/bin/env python3
"""The demo's embedded default policy: an OpenAI-compatible chat server that
plays back recorded answers (examples/demo-policy.json) instead of running a
model, so the whole pipeline runs with no GPU and no weights.

It answers the way vLLM does when forge-proxy asks for token ids: a byte-level
"tokenizer" with a tiny chat template gives prompt_token_ids and
choices[].token_ids (deltas when streaming) and per-token logprobs. The
template renders an assistant turn exactly as it was sampled, so each call's
prompt extends the previous prompt plus completion, as with a real model.

Usage: demo-policy.py --answers FILE --port-file FILE   (listens on 127.0.0.1)
"""
import argparse
import threading
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

END = 256  # special token ids start above the byte range
ROLE = {"system": 257, "user": 258, "assistant": 259, "tool": 260}


def encode(text):
    return list(text.encode("utf-8"))


def render(messages):
    ids = []
    for m in messages:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        ids += [ROLE.get(m.get("role"), 258)] + encode(content) + [END]
    return ids + [ROLE["assistant"]]


class Policy:
    """Plays one recorded variant per rollout: the first turn takes the next
    variant of the task in turn (as sampling would vary), later turns follow
    the variant whose first answer the conversation already holds."""

    def __init__(self, path):
        with open(path) as f:
            self.tasks = json.load(f)["tasks"]
        self.next_variant = {}
        self.lock = threading.Lock()

    def answer(self, messages):
        task_text = " ".join(str(m.get("content")) for m in messages if m.get("role") == "user")
        said = [m.get("content") for m in messages if m.get("role") == "assistant"]
        for task in self.tasks:
            if task["match"] not in task_text:
                continue
            variants = task["variants"]
            if not said:
                with self.lock:
                    pick = self.next_variant.get(task["match"], 0)
                    self.next_variant[task["match"]] = pick + 1
                steps = variants[pick % len(variants)]
            else:
                steps = next((v for v in variants if v[0] == said[0]), ["DONE"])
            return steps[min(len(said), len(steps) - 1)]
        return "DONE"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/v1/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "policy", "object": "model"}]})
        elif self.path.startswith("/health"):
            self.send_json(200, {"status": "ok"})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        except ValueError:
            self.send_json(400, {"error": {"message": "malformed JSON", "type": "invalid_request_error"}})
            return
        if not self.path.startswith("/v1/chat/completions"):
            self.send_json(404, {"error": {"message": "only /v1/chat/completions"}})
            return
        messages = body.get("messages", [])
        text = self.server.policy.answer(messages)
        prompt = render(messages)
        completion = encode(text) + [END]
        logprobs = [-0.01 * (1 + i % 7) for i in range(len(completion))]
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(completion),
                 "total_tokens": len(prompt) + len(completion)}
        want_ids = bool(body.get("return_token_ids"))
        want_logprobs = bool(body.get("logprobs"))
        if body.get("stream"):
            self.stream(body, text, prompt, completion, logprobs, usage, want_ids, want_logprobs)
            return
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        if want_ids:
            choice["token_ids"] = completion
        if want_logprobs:
            choice["logprobs"] = {"content": [{"token": "t%d" % t, "logprob": lp, "top_logprobs": []}
                                              for t, lp in zip(completion, logprobs)]}
        reply = {"id": "chatcmpl-demo", "object": "chat.completion", "model": body.get("model", "policy"),
                 "choices": [choice], "usage": usage}
        if want_ids:
            reply["prompt_token_ids"] = prompt
        self.send_json(200, reply)

    def stream(self, body, text, prompt, completion, logprobs, usage, want_ids, want_logprobs):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(obj):
            data = ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        pieces = [text[i:i + 8] for i in range(0, len(text), 8)] or [""]
        pos = 0
        for n, piece in enumerate(pieces):
            ids = encode(piece)
            last = n == len(pieces) - 1
            if last:
                ids = ids + [END]
            choice = {"index": 0, "delta": {"content": piece}, "finish_reason": "stop" if last else None}
            if n == 0:
                choice["delta"]["role"] = "assistant"
            if want_ids:
                choice["token_ids"] = ids
            if want_logprobs:
                choice["logprobs"] = {"content": [{"token": "t%d" % t, "logprob": lp, "top_logprobs": []}
                                                  for t, lp in zip(ids, logprobs[pos:pos + len(ids)])]}
            pos += len(ids)
            chunk = {"id": "chatcmpl-demo", "object": "chat.completion.chunk", "choices": [choice]}
            if n == 0 and want_ids:
                chunk["prompt_token_ids"] = prompt
            send(chunk)
        if (body.get("stream_options") or {}).get("include_usage"):
            send({"id": "chatcmpl-demo", "object": "chat.completion.chunk", "choices": [], "usage": usage})
        send("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", required=True)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.policy = Policy(args.answers)
    with open(args.port_file, "w") as f:
        f.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
