#!/usr/bin/env python3
"""A scripted OpenAI-compatible /v1/embeddings server for forge-dedup's tests.

Listens on 127.0.0.1 only (port chosen by the OS, written to --port-file).
Each text's vector is a pseudo-random direction seeded by its *canonical*
text; PARAPHRASES maps a reworded text to the canonical one plus a little
noise of its own, so paraphrases land near each other (cosine ~0.97) while the
n-gram embedding would see them as unrelated. Vectors are returned unnormalised
(scaled by 3) so the client must renormalise.

Modes: ok; fail-once (the first request gets HTTP 500); malformed (every
response is broken JSON). Every request is logged as one JSON line
{"inputs": n} to --log.
"""
import argparse
import hashlib
import json
import math
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIM = 64
PARAPHRASES = {
    "Flip the order of a singly linked list without allocating new nodes.":
        "Reverse a linked list in place.",
    "Find which two numbers in the array add up to the target value.":
        "Two-sum: return indices of two elements summing to a target.",
}


def direction(seed_text, dim=DIM):
    rng = random.Random(hashlib.sha256(seed_text.encode()).digest())
    return [rng.gauss(0, 1) for _ in range(dim)]


def embed(text):
    canonical = PARAPHRASES.get(text)
    if canonical is None:
        return [3 * x for x in direction(text)]
    base, noise = direction(canonical), direction("noise:" + text)
    nb = math.sqrt(sum(x * x for x in base))
    nn = math.sqrt(sum(x * x for x in noise))
    return [3 * (b / nb + 0.25 * n / nn) for b, n in zip(base, noise)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="ok", choices=["ok", "fail-once", "malformed"])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    lock = threading.Lock()
    state = {"requests": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, body):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            request = json.loads(self.rfile.read(length))
            if self.path != "/v1/embeddings":
                return self.reply(404, '{"error":"not found"}')
            inputs = request["input"]
            with lock:
                state["requests"] += 1
                n = state["requests"]
                with open(args.log, "a") as log:
                    log.write(json.dumps({"inputs": len(inputs), "model": request.get("model")}) + "\n")
            if args.mode == "fail-once" and n == 1:
                return self.reply(500, '{"error":"warming up"}')
            if args.mode == "malformed":
                return self.reply(200, '{"object":"list","data":[{"embedding":[0.1,')
            data = [{"object": "embedding", "index": i, "embedding": embed(t)}
                    for i, t in enumerate(inputs)]
            self.reply(200, json.dumps({"object": "list", "data": data, "model": request["model"],
                                        "usage": {"prompt_tokens": 0, "total_tokens": 0}}))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
