#!/usr/bin/env python3
"""A scripted stand-in for a vLLM OpenAI-compatible server, for forge-proxy's tests.

It speaks vLLM's token fields: with "return_token_ids" the response carries
top-level prompt_token_ids (first chunk when streaming; on the choice for
/v1/completions) and choices[].token_ids (deltas when streaming); with
"logprobs" it returns per-token logprobs. Ids are deterministic so tests can
check what the proxy recorded.

The last user message (or the prompt) chooses the behaviour:
  script:tool        a tool call whose arguments stream in fragments
  script:500         HTTP 500 with an OpenAI error body
  script:hang        accept and never answer
  script:disconnect  stream three tokens, then drop the connection
  script:slow:N      N tokens, 50 ms apart
  script:words:N     N tokens
  script:429         HTTP 429 with Retry-After: 1, retry-after-ms and x-ratelimit-* headers
  script:503         HTTP 503 with Retry-After: 2
  script:flaky:S:N   HTTP S (429 with Retry-After: 1, else none) to the first N requests
                     with this exact command, then a normal answer
  script:noids       a normal answer that ignores return_token_ids (no ids)
  script:malformed   streamed: the third event is not JSON (a truncated object),
                     then the answer goes on to its end
  anything else      echo "hello from fake" (4 tokens)

With --scenario FILE (for real harnesses, whose last user message is not ours
to choose), a request that offers tools is answered by step N of the file,
where N is the number of tool results already in the conversation (the last
step repeats). The file is JSON: {"steps": [step, ...]}, a step being
  {"tool_call": {"name": "Write", "arguments": {...}}}  or  {"text": "..."},
either with an optional "reasoning": "..." sent first as reasoning_content.
A step may carry faults, each of which fires on the first request to reach
the step only (later ones are answered normally, to see how a harness retries):
  "fail_once": STATUS   that HTTP error (500, 503, 429, 529, ...) with an
                        OpenAI error body; with "retry_after": "S", also that
                        Retry-After header
  "cut_once": true      a streamed answer that stops after some content: the
                        connection is dropped
  "malformed_once": true  a streamed answer one of whose events, after some
                        content, is not valid JSON (a truncated object); the
                        stream then goes on to its normal end, as a server
                        with a bug would send it
  "delay_first": S      S seconds (a float) before the answer's first byte
                        (its status line): a slow first byte
A tool-call step with "say_first": "TEXT" streams TEXT as content before the
call (chat and Gemini streams only), so that a cut or a malformed event falls
after some text in both APIs (Gemini sends a functionCall whole, and a proxy
that translates holds a call's fragments until it is whole).
A request without tools (a harness's side call, e.g. a title) gets "Forge task".
A POST to .../responses (Codex CLI run straight against this server) gets the
step as an OpenAI Responses stream (the scenario's steps, token ids aside).
A POST to .../models/M:streamGenerateContent (Gemini CLI run straight against
this server; ?alt=sse) gets it as a Gemini API stream, and to
.../models/M:generateContent as one Gemini response; there the step index is
the number of functionResponse parts in "contents".

With --vl (a vision-language policy, vl_tokens.py) a non-streamed chat
answer's ids follow a Qwen-VL template: image parts expand to placeholder
runs sized from the image, the response carries vLLM's mm_placeholders, and
each prompt extends the previous prompt + completion.

Every request is appended to --log as JSON (path, headers, body, keys that
came twice in one object); LOG.heads gets a line as each request's header
arrives, before its body is read, and LOG.cut one for a request whose body
was cut short (its sender closed the connection first).
Listens on 127.0.0.1 only.
"""
import argparse
import json
import socket
import sys
import threading
import time
from http.server import ThreadingHTTPServer

import vl_tokens
from json_handler import JsonHandler, serve

LOG_LOCK = threading.Lock()
ARGS = None
FAILED_STEPS = set()  # step indexes whose fail_once has fired
FLAKY_SEEN = {}  # script:flaky command -> requests seen


def prompt_ids(body):
    text = json.dumps(body.get("messages", body.get("prompt", "")))
    # "ids:every-char" in the conversation: an id for each of its characters,
    # as a tokenizer gives a long conversation tens of thousands.
    if "ids:every-char" in text:
        return [100 + (ord(c) % 50) for c in text]
    return [100 + (ord(c) % 50) for c in text[:40]] or [100]


def command(body):
    if "messages" in body:
        for m in reversed(body["messages"]):
            if m.get("role") == "user":
                c = m.get("content")
                if isinstance(c, list):
                    c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
                return c or ""
        return ""
    p = body.get("prompt", "")
    return p if isinstance(p, str) else json.dumps(p)


def load_scenario(path):
    with open(path) as f:
        return json.load(f)["steps"]


def tool_results(body):
    n = 0
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            n += 1
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if item.get("type") == "function_call_output":
            n += 1
    for content in body.get("contents", []) if isinstance(body.get("contents"), list) else []:
        n += sum(1 for part in content.get("parts", []) if isinstance(part, dict) and "functionResponse" in part)
    return n


def scenario_step(body):
    """The scripted reply for a harness request, or None without --scenario."""
    if not ARGS.scenario or ("messages" not in body and "input" not in body and "contents" not in body):
        return None
    if not body.get("tools"):
        return {"text": "Forge task"}
    steps = load_scenario(ARGS.scenario)
    return steps[min(tool_results(body), len(steps) - 1)]


def scenario_failure(body, kind="fail_once"):
    """The step whose fail_once (cut_once, malformed_once, delay_first) fires for this request
    (the first to reach it), else None."""
    step = scenario_step(body)
    if not step or kind not in step:
        return None
    index = min(tool_results(body), len(load_scenario(ARGS.scenario)) - 1)
    with LOG_LOCK:
        if (kind, index) in FAILED_STEPS:
            return None
        FAILED_STEPS.add((kind, index))
    return step


def flaky_status(cmd):
    """script:flaky:S:N: S for the first N requests with this command, then None."""
    if not cmd.startswith("script:flaky:"):
        return None
    _, _, status, count = cmd.split(":")[:4]
    with LOG_LOCK:
        seen = FLAKY_SEEN.get(cmd, 0)
        FLAKY_SEEN[cmd] = seen + 1
    return int(status) if seen < int(count) else None


def fragments(text, size=7):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def words_for(cmd):
    if cmd.startswith("script:words:") or cmd.startswith("script:slow:"):
        n = int(cmd.rsplit(":", 1)[1])
        return ["w%d " % i for i in range(n)]
    return ["hello", " from", " fake", "!"]


class Handler(JsonHandler):
    def do_GET(self):
        if self.path.endswith("/health"):
            self.send_json(200, {"ok": True})
        elif self.path.endswith("/v1/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "fake-policy", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        if ARGS.log:  # the header, before the body: a proxy that forwards as it reads sends it early
            with LOG_LOCK, open(ARGS.log + ".heads", "a") as f:
                f.write(json.dumps({"path": self.path, "content_length": length, "at": time.time()}) + "\n")
        raw = self.rfile.read(length)
        if len(raw) < length:  # the sender gave up on this request; nothing to answer
            if ARGS.log:
                with LOG_LOCK, open(ARGS.log + ".cut", "a") as f:
                    f.write(json.dumps({"path": self.path, "content_length": length, "got": len(raw)}) + "\n")
            self.close_connection = True
            return
        duplicates = []

        def pairs(items):
            keys = [k for k, _ in items]
            duplicates.extend(k for k in set(keys) if keys.count(k) > 1)
            return dict(items)
        body = json.loads(raw, object_pairs_hook=pairs)
        if ARGS.log:
            with LOG_LOCK, open(ARGS.log, "a") as f:
                f.write(json.dumps({"path": self.path, "headers": dict(self.headers), "body": body,
                                    "duplicate_keys": duplicates, "received_at": time.time()}) + "\n")
        completions = self.path.endswith("/v1/completions")
        cmd = command(body)
        if cmd == "script:500":
            return self.send_json(500, {"error": {"message": "fake upstream exploded", "type": "server_error"}})
        if cmd == "script:429":
            return self.send_json(429, {"error": {"message": "fake upstream is rate limited", "type": "rate_limit"}},
                                  [("Retry-After", "1"), ("retry-after-ms", "1000"),
                                   ("x-ratelimit-remaining-requests", "0"), ("x-ratelimit-reset-requests", "1s"),
                                   ("x-fake-private", "not for clients")])
        if cmd == "script:503":
            return self.send_json(503, {"error": {"message": "fake upstream is overloaded", "type": "server_error"}},
                                  [("Retry-After", "2")])
        flaky = flaky_status(cmd)
        if flaky:
            return self.send_json(flaky, {"error": {"message": "fake upstream is flaky", "type": "server_error"}},
                                  [("Retry-After", "1")] if flaky == 429 else [])
        if cmd == "script:noids":
            body.pop("return_token_ids", None)
        failure = scenario_failure(body)
        if failure:
            status = int(failure["fail_once"])
            headers = [("Retry-After", str(failure["retry_after"]))] if "retry_after" in failure else []
            error = {"message": "fake upstream failed once", "type": "server_error"}
            if ":generateContent" in self.path or ":streamGenerateContent" in self.path:  # Gemini's shape
                error = {"code": status, "message": "fake upstream failed once",
                         "status": {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}.get(status, "INTERNAL")}
            return self.send_json(status, {"error": error}, headers)
        gemini = ":streamGenerateContent" in self.path or ":generateContent" in self.path
        streamed = body.get("stream") or ":streamGenerateContent" in self.path
        self.cut_after = 2 if streamed and scenario_failure(body, "cut_once") else None
        self.malformed_at = 2 if streamed and (cmd == "script:malformed" or scenario_failure(body, "malformed_once")) else None
        slow = scenario_failure(body, "delay_first")
        if slow:
            time.sleep(float(slow["delay_first"]))
        if cmd == "script:hang":
            time.sleep(60)
            return
        if gemini:
            return self.gemini(body, ":streamGenerateContent" in self.path)
        if self.path.endswith("/responses"):
            return self.responses_stream(body)
        if body.get("stream"):
            return self.stream(body, cmd, completions)
        return self.whole(body, cmd, completions)

    def logprob_entry(self, i, tok):
        return {"token": tok, "logprob": -0.125 * (i + 1), "bytes": list(tok.encode()), "top_logprobs": []}

    def whole(self, body, cmd, completions):
        step = scenario_step(body)
        words = words_for(cmd)
        if step is not None:
            words = fragments(step["text"]) if "text" in step else \
                fragments(json.dumps(step["tool_call"]["arguments"]))
        ids = [1000 + i for i in range(len(words))]
        choice = {"index": 0, "finish_reason": "stop", "logprobs": None}
        if completions:
            choice["text"] = "".join(words)
            if body.get("logprobs") is not None:
                choice["logprobs"] = {"tokens": words, "token_logprobs": [-0.125 * (i + 1) for i in range(len(words))],
                                      "top_logprobs": None, "text_offset": []}
        else:
            msg = {"role": "assistant", "content": "".join(words)}
            if step is not None and "tool_call" in step:
                msg = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_%d" % tool_results(body), "type": "function",
                     "function": {"name": step["tool_call"]["name"], "arguments": "".join(words)}}]}
                choice["finish_reason"] = "tool_calls"
            elif cmd == "script:tool":
                msg = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}
                choice["finish_reason"] = "tool_calls"
            if step is not None and step.get("reasoning"):
                msg["reasoning_content"] = step["reasoning"]
            choice["message"] = msg
            if body.get("logprobs"):
                choice["logprobs"] = {"content": [self.logprob_entry(i, w) for i, w in enumerate(words)]}
        resp = {"id": "cmpl-fake", "object": "text_completion" if completions else "chat.completion",
                "created": int(time.time()), "model": body.get("model", "fake-policy"), "choices": [choice],
                "usage": {"prompt_tokens": len(prompt_ids(body)), "completion_tokens": len(words),
                          "total_tokens": len(prompt_ids(body)) + len(words)}}
        if body.get("return_token_ids") and ARGS.vl and not completions:
            choice["token_ids"] = vl_tokens.completion(choice["message"].get("content") or "")
            resp["prompt_token_ids"], resp["mm_placeholders"] = vl_tokens.prompt(body)
            if ARGS.log:  # what this server said, for a test to compare forge's output with
                with LOG_LOCK, open(ARGS.log + ".ids", "a") as f:
                    f.write(json.dumps({"prompt_token_ids": resp["prompt_token_ids"],
                                        "token_ids": choice["token_ids"]}) + "\n")
            if body.get("logprobs"):  # one entry an id, as vLLM gives
                choice["logprobs"] = {"content": [self.logprob_entry(i, "t") for i in range(len(choice["token_ids"]))]}
        elif body.get("return_token_ids"):
            choice["token_ids"] = ids
            if completions:
                choice["prompt_token_ids"] = prompt_ids(body)
            else:
                resp["prompt_token_ids"] = prompt_ids(body)
        self.send_json(200, resp)

    def responses_stream(self, body):
        """A scenario step as an OpenAI Responses stream (for Codex CLI run straight against this server)."""
        step = scenario_step(body) or {"text": "hello from fake!"}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        seq = [0]

        def event(kind, **fields):
            seq[0] += 1
            self.chunk(json.dumps(dict(type=kind, sequence_number=seq[0], **fields)))
        n = tool_results(body)
        response = {"id": "resp_fake%d" % n, "object": "response", "status": "in_progress", "output": [],
                    "model": body.get("model", "fake-policy")}
        event("response.created", response=response)
        if "tool_call" in step:
            args = json.dumps(step["tool_call"]["arguments"])
            item = {"id": "fc_%d" % n, "type": "function_call", "status": "completed", "call_id": "call_%d" % n,
                    "name": step["tool_call"]["name"], "arguments": args}
            if "namespace" in step["tool_call"]:  # a tool of a Responses "namespace" tool
                item["namespace"] = step["tool_call"]["namespace"]
            pieces = fragments(args)
        else:
            item = {"id": "msg_%d" % n, "type": "message", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": step["text"], "annotations": []}]}
            pieces = fragments(step["text"])
        empty = {"arguments": ""} if "tool_call" in step else {"content": []}
        event("response.output_item.added", output_index=0, item=dict(item, status="in_progress", **empty))
        cut = self.cut_after
        for i, piece in enumerate(pieces):
            if cut is not None and i == cut:
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if self.malformed_at is not None and i == self.malformed_at:
                self.chunk('{"type": "response.output_text.delta", "delta": "trunc')
            kind = "response.function_call_arguments.delta" if "tool_call" in step else "response.output_text.delta"
            event(kind, item_id=item["id"], output_index=0, content_index=0, delta=piece)
        event("response.output_item.done", output_index=0, item=item)
        usage = {"input_tokens": len(prompt_ids(body)), "output_tokens": len(pieces),
                 "total_tokens": len(prompt_ids(body)) + len(pieces)}
        event("response.completed", response=dict(response, status="completed", output=[item], usage=usage))
        self.wfile.write(b"0\r\n\r\n")

    def gemini(self, body, streamed):
        """A scenario step in the Gemini API (for Gemini CLI run straight against this server):
        a functionCall part, or the text in pieces; streamed as SSE, one GenerateContentResponse each."""
        step = scenario_step(body) or {"text": "hello from fake!"}
        if "tool_call" in step:
            parts = [{"functionCall": {"name": step["tool_call"]["name"], "args": step["tool_call"]["arguments"]}}]
        else:
            parts = [{"text": piece} for piece in fragments(step["text"])]
        usage = {"promptTokenCount": len(prompt_ids(body)), "candidatesTokenCount": len(parts),
                 "totalTokenCount": len(prompt_ids(body)) + len(parts)}
        model = self.path.split("/models/")[-1].split(":")[0]
        if not streamed:
            return self.send_json(200, {"candidates": [{"content": {"role": "model", "parts": parts},
                                                        "finishReason": "STOP", "index": 0}],
                                        "usageMetadata": usage, "modelVersion": model})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # A tool call comes whole, after say_first's text (if any): a cut or a
        # malformed event (at index 2) falls after that text.
        said = [{"text": t} for t in fragments(step["say_first"])] if "tool_call" in step and step.get("say_first") else []
        events = said + parts
        for i, part in enumerate(events):
            if self.cut_after is not None and i == self.cut_after:
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if self.malformed_at is not None and i == self.malformed_at:
                self.chunk('{"candidates": [{"content": {"role": "model", "parts": [{"text": "trunc')
            self.chunk({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
                        "modelVersion": model})
        self.chunk({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP",
                                    "index": 0}], "usageMetadata": usage, "modelVersion": model})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def chunk(self, obj):
        data = ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def stream(self, body, cmd, completions):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        want_ids = body.get("return_token_ids")
        want_lp = body.get("logprobs") is not None and body.get("logprobs") is not False
        head = {"id": "chatcmpl-fake", "object": "text_completion" if completions else "chat.completion.chunk",
                "created": int(time.time()), "model": body.get("model", "fake-policy")}
        words = words_for(cmd)
        tool = None  # (call id, function name) when the reply is a tool call
        if cmd == "script:tool":
            words = ["{\"city\"", ": \"Par", "is\"}"]
            tool = ("call_1", "get_weather")
        step = scenario_step(body)
        if step is not None:
            if "text" in step:
                words = fragments(step["text"])
                tool = None
            else:
                words = fragments(json.dumps(step["tool_call"]["arguments"]))
                tool = ("call_%d" % tool_results(body), step["tool_call"]["name"])
        said = fragments(step["say_first"]) if step is not None and tool is not None and step.get("say_first") else []
        first = dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                     "finish_reason": None}])
        if completions:
            first["choices"] = [{"index": 0, "text": "", "logprobs": None, "finish_reason": None}]
        if want_ids:
            if completions:
                first["choices"][0]["prompt_token_ids"] = prompt_ids(body)
            else:
                first["prompt_token_ids"] = prompt_ids(body)
            first["choices"][0]["token_ids"] = []
        self.chunk(first)
        thinking = fragments(step["reasoning"]) if step is not None and step.get("reasoning") else []
        for i, w in enumerate(thinking):
            c = {"index": 0, "logprobs": None, "finish_reason": None, "delta": {"reasoning_content": w}}
            if want_ids:
                c["token_ids"] = [900 + i]
            self.chunk(dict(head, choices=[c]))
        for i, w in enumerate(said):  # counted with the call's fragments for a cut or a malformed event
            if self.cut_after is not None and i == self.cut_after:
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if self.malformed_at is not None and i == self.malformed_at:
                self.chunk('{"id": "chatcmpl-fake", "choices": [{"index": 0, "delta": {"content": "trunc')
            self.chunk(dict(head, choices=[{"index": 0, "logprobs": None, "finish_reason": None,
                                            "delta": {"content": w}}]))
        if said:
            self.cut_after = None if self.cut_after is None else max(0, self.cut_after - len(said))
            self.malformed_at = None if self.malformed_at is None or self.malformed_at < len(said) else \
                self.malformed_at - len(said)
        for i, w in enumerate(words):
            if (cmd == "script:disconnect" and i == 3) or (self.cut_after is not None and i == self.cut_after):
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if self.malformed_at is not None and i == self.malformed_at:
                self.chunk('{"id": "chatcmpl-fake", "choices": [{"index": 0, "delta": {"content": "trunc')
            if cmd.startswith("script:slow:"):
                time.sleep(0.05)
            c = {"index": 0, "logprobs": None, "finish_reason": None}
            if completions:
                c["text"] = w
                if want_lp:
                    c["logprobs"] = {"tokens": [w], "token_logprobs": [-0.125 * (i + 1)], "top_logprobs": None,
                                     "text_offset": [0]}
            elif tool is not None:
                frag = {"index": 0, "function": {"arguments": w}}
                if i == 0:
                    frag = {"index": 0, "id": tool[0], "type": "function",
                            "function": {"name": tool[1], "arguments": w}}
                c["delta"] = {"tool_calls": [frag]}
            else:
                c["delta"] = {"content": w}
            if want_lp and not completions:
                c["logprobs"] = {"content": [self.logprob_entry(i, w)]}
            if want_ids:
                c["token_ids"] = [1000 + i]
            self.chunk(dict(head, choices=[c]))
        fin = {"index": 0, "finish_reason": "tool_calls" if tool is not None else "stop", "logprobs": None}
        fin["text" if completions else "delta"] = "" if completions else {}
        self.chunk(dict(head, choices=[fin]))
        if (body.get("stream_options") or {}).get("include_usage"):
            self.chunk(dict(head, choices=[], usage={"prompt_tokens": len(prompt_ids(body)),
                                                     "completion_tokens": len(words),
                                                     "total_tokens": len(prompt_ids(body)) + len(words)}))
        self.chunk("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # clients (the proxy under kill -9) hang up; that is the point of some tests


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", help="write the bound port here once listening")
    p.add_argument("--log")
    p.add_argument("--scenario", help="JSON steps that answer a real harness's tool-offering requests")
    p.add_argument("--tls-cert", help="serve https with this PEM certificate (and --tls-key)")
    p.add_argument("--tls-key")
    p.add_argument("--vl", action="store_true", help="Qwen-VL-shaped token ids (vl_tokens.py), non-streamed chat")
    ARGS = p.parse_args()
    server = QuietServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    if ARGS.tls_cert:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    serve(server, ARGS.port_file)


if __name__ == "__main__":
    main()
