"""A scripted OpenAI-compatible chat completions endpoint for forge-verify's
judge tests. Listens on 127.0.0.1 only. Behaviour by mode:
  score  answer {"score": SCORE, "reason": "scripted"}
  error  answer HTTP 500 every time
  junk   answer 200 with a reply that holds no score
Every request is appended to LOG as one JSON line."""
import http.server
import json
import sys

mode, score, log_path, port_file = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open(log_path, "a") as log:
            log.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization"),
                                  "body": json.loads(body)}) + "\n")
        if mode == "error":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b'{"error": "scripted failure"}')
            return
        content = "I cannot decide." if mode == "junk" else \
            'Here you go: {"score": %s, "reason": "scripted"}' % score
        reply = {"id": "x", "object": "chat.completion",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop"}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
