#!/usr/bin/env python3
"""A scripted Anthropic Messages server for forge-proxy's pass-through tests
(--upstream-api anthropic): POST /v1/messages (whole or streamed, the stream
as Anthropic sends it: thinking with a signature, text, a tool_use whose input
arrives in fragments, message_delta, message_stop) and
/v1/messages/count_tokens. Every request is appended to --log as JSON (path,
headers, the body's exact text). The last user text picks a script:
  script:401  an authentication error in Anthropic's shape
  script:cut  message_start, then the connection is dropped mid-stream
  script:529  overloaded_error (HTTP 529) with retry-after: 3 and anthropic-ratelimit-* headers
  script:slow the stream's events 100 ms apart

With --scenario FILE (for Claude Code run straight against this server, as
fake_upstream.py's --scenario for the chat API), a request that offers tools
is answered by step N of the file, N being the number of tool_result blocks
already in the conversation (the last step repeats): {"steps": [step, ...]},
a step being {"tool_call": {"name": "Write", "arguments": {...}}} (a tool_use
block whose input streams in fragments) or {"text": "..."}; a request without
tools gets "Forge task". A step's faults fire on the first request to reach
it only:
  "fail_once": STATUS     that HTTP error in Anthropic's shape: 529
                          overloaded_error, 429 rate_limit_error, else
                          api_error; with "retry_after": "S", also that
                          retry-after header
  "cut_once": true        the stream stops after some content (the
                          connection is dropped)
  "malformed_once": true  one event after some content is not valid JSON;
                          the stream then goes on to message_stop
  "delay_first": S        S seconds before the answer's first byte
Non-streamed requests (Claude Code re-asks without streaming after a
malformed stream) get the step as one message.
"""
import argparse
import json
import socket
import threading
import time
from http.server import ThreadingHTTPServer

from json_handler import JsonHandler, serve

MESSAGE = {
    "id": "msg_fake01", "type": "message", "role": "assistant", "model": "teacher-1",
    "content": [
        {"type": "thinking", "thinking": "The user wants a file.", "signature": "sig-teacher"},
        {"type": "text", "text": "Writing it now."},
        {"type": "tool_use", "id": "toolu_01", "name": "Write", "input": {"path": "a.txt", "text": "hi"}},
    ],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 21, "output_tokens": 17},
}


def last_text(body):
    for m in reversed(body.get("messages", [])):
        c = m.get("content")
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            for b in c:
                if isinstance(b, dict) and b.get("type") == "text":
                    return b.get("text", "")
    return ""


def stream_events():
    start = dict(MESSAGE, content=[], stop_reason=None, usage={"input_tokens": 21, "output_tokens": 1})
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    yield "content_block_start", {"type": "content_block_start", "index": 0,
                                  "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
    for piece in ["The user ", "wants a file."]:
        yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "thinking_delta", "thinking": piece}}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                  "delta": {"type": "signature_delta", "signature": "sig-teacher"}}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield "content_block_start", {"type": "content_block_start", "index": 1,
                                  "content_block": {"type": "text", "text": ""}}
    for piece in ["Writing ", "it now."]:
        yield "content_block_delta", {"type": "content_block_delta", "index": 1,
                                      "delta": {"type": "text_delta", "text": piece}}
    yield "content_block_stop", {"type": "content_block_stop", "index": 1}
    yield "content_block_start", {"type": "content_block_start", "index": 2,
                                  "content_block": {"type": "tool_use", "id": "toolu_01", "name": "Write", "input": {}}}
    for piece in ['{"path": "a.txt", ', '"text": "hi"}']:
        yield "content_block_delta", {"type": "content_block_delta", "index": 2,
                                      "delta": {"type": "input_json_delta", "partial_json": piece}}
    yield "content_block_stop", {"type": "content_block_stop", "index": 2}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                            "usage": {"output_tokens": 17}}
    yield "message_stop", {"type": "message_stop"}


FIRED = set()  # (fault, step index) pairs that have fired
FIRED_LOCK = threading.Lock()


def tool_results(body):
    return sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")


def scenario_step(body):
    """(index, step) for a scenario request: the step its tool results reach; (None, text) without tools."""
    if not body.get("tools"):
        return None, {"text": "Forge task"}
    with open(ARGS.scenario) as f:
        steps = json.load(f)["steps"]
    index = min(tool_results(body), len(steps) - 1)
    return index, steps[index]


def fires(index, step, fault):
    """Whether STEP's FAULT fires now: it has one and this is the first request to reach it."""
    if index is None or fault not in step:
        return False
    with FIRED_LOCK:
        if (fault, index) in FIRED:
            return False
        FIRED.add((fault, index))
    return True


def scenario_message(body, step):
    model = body.get("model", "teacher-1")
    if "tool_call" in step:
        block = {"type": "tool_use", "id": "toolu_%02d" % tool_results(body), "name": step["tool_call"]["name"],
                 "input": step["tool_call"]["arguments"]}
        return dict(MESSAGE, id="msg_fake%02d" % tool_results(body), model=model, content=[block],
                    stop_reason="tool_use", usage={"input_tokens": 21, "output_tokens": 9})
    return dict(MESSAGE, id="msg_fake%02d" % tool_results(body), model=model,
                content=[{"type": "text", "text": step["text"]}], stop_reason="end_turn",
                usage={"input_tokens": 21, "output_tokens": 5})


def fragments(text, size=7):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def scenario_events(message):
    """message as Anthropic streams it: a text block or a tool_use block whose input comes in fragments."""
    start = dict(message, content=[], stop_reason=None, usage={"input_tokens": 21, "output_tokens": 1})
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    block = message["content"][0]
    if block["type"] == "tool_use":
        yield "content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": dict(block, input={})}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in fragments(json.dumps(block["input"]))]
    else:
        yield "content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}}
        deltas = [{"type": "text_delta", "text": p} for p in fragments(block["text"])]
    for d in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


class Handler(JsonHandler):
    def do_GET(self):
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if ARGS.log:
            with open(ARGS.log, "a") as f:
                f.write(json.dumps({"path": self.path, "headers": dict(self.headers), "body": raw.decode()}) + "\n")
        body = json.loads(raw)
        path = self.path.split("?")[0]
        if path.endswith("/v1/messages/count_tokens"):
            return self.send_json(200, {"input_tokens": 42})
        if not path.endswith("/v1/messages"):
            return self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
        if ARGS.scenario:
            return self.scenario(body)
        script = last_text(body)
        if script == "script:401":
            return self.send_json(401, {"type": "error",
                                        "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        if script == "script:529":
            return self.send_json(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                                  [("retry-after", "3"), ("anthropic-ratelimit-requests-remaining", "0")])
        if not body.get("stream"):
            return self.send_json(200, MESSAGE)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for name, data in stream_events():
            frame = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
            if script == "script:slow":
                time.sleep(0.1)
            if script == "script:cut" and name == "message_start":
                self.close_connection = True
                return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


    def frame(self, name, data):
        text = data if isinstance(data, str) else json.dumps(data)
        frame = f"event: {name}\ndata: {text}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.flush()

    def scenario(self, body):
        index, step = scenario_step(body)
        if fires(index, step, "fail_once"):
            status = int(step["fail_once"])
            kind = {529: "overloaded_error", 429: "rate_limit_error"}.get(status, "api_error")
            headers = [("retry-after", str(step["retry_after"]))] if "retry_after" in step else []
            return self.send_json(status, {"type": "error", "error": {"type": kind, "message": "fake failed once"}},
                                  headers)
        streamed = body.get("stream")
        cut = streamed and fires(index, step, "cut_once")
        malformed = streamed and fires(index, step, "malformed_once")
        if fires(index, step, "delay_first"):
            time.sleep(float(step["delay_first"]))
        message = scenario_message(body, step)
        if not streamed:
            return self.send_json(200, message)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deltas = 0
        for name, data in scenario_events(message):
            if name == "content_block_delta":
                deltas += 1
                if deltas == 3 and cut:  # two deltas of content, then nothing
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if deltas == 3 and malformed:
                    self.frame("content_block_delta", '{"type": "content_block_delta", "index": 0, "delta": {"type')
            self.frame(name, data)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--log")
    p.add_argument("--scenario", help="JSON steps that answer Claude Code's requests (see above)")
    ARGS = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    serve(server, ARGS.port_file)


if __name__ == "__main__":
    main()
