#!/usr/bin/env python3
"""A scripted model for the reference ReACT harness (harnesses/react-agent.sh):
OpenAI chat completions on 127.0.0.1 that answer the first turn with one shell
command and every later turn with DONE, as vLLM would (prompt and completion
token ids: one prompt id a message character, so a resent conversation's ids
begin with the last call's).

  react_model.py PORT_FILE [--command CMD] [--log FILE] [--first-turn-delay S]

--log appends each request's Authorization header, path and messages as a
JSON line; --first-turn-delay holds each first-turn answer back S seconds.
A request whose last message is "sleep:S" is answered after S seconds."""
import argparse
import http.server
import json
import time

parser = argparse.ArgumentParser()
parser.add_argument("port_file")
parser.add_argument("--command", default="echo hi > hi.txt")
parser.add_argument("--log")
parser.add_argument("--first-turn-delay", type=float, default=0)
args = parser.parse_args()


class Model(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if args.log:
            with open(args.log, "a") as f:
                f.write(json.dumps({"auth": self.headers.get("Authorization"), "path": self.path,
                                    "messages": body["messages"]}) + "\n")
        said = [m for m in body["messages"] if m["role"] == "assistant"]
        last = body["messages"][-1]["content"]
        if last.startswith("sleep:"):
            time.sleep(float(last[len("sleep:"):]))
        elif not said:
            time.sleep(args.first_turn_delay)
        content = args.command if not said else "DONE"
        prompt_ids = [ord(c) for m in body["messages"] for c in m["content"]]
        reply = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model", "m"),
                            "prompt_token_ids": prompt_ids,
                            "choices": [{"index": 0, "finish_reason": "stop", "token_ids": [ord(c) for c in content],
                                         "message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *_):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Model)
with open(args.port_file, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
