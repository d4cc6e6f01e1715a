#!/usr/bin/env python3
"""Sends recorded exchanges' requests through forge-proxy, in file order, as
each line's client would (openai-chat: /v1/chat/completions; anthropic:
/v1/messages), under the line's rollout (/r/<rollout_id>/...). With
forge-proxy --replay on the same file, the proxy answers each from the file
and records the calls in its store, as it records a harness's.

  dedup_send_calls.py EXCHANGES.jsonl http://127.0.0.1:PORT
"""
import http.client
import json
import sys
import urllib.parse

PATHS = {"openai-chat": "/v1/chat/completions", "anthropic": "/v1/messages"}


def main():
    path, base = sys.argv[1], urllib.parse.urlsplit(sys.argv[2])
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=60)
    sent = 0
    with open(path) as f:
        for n, line in enumerate(f, 1):
            call = json.loads(line)
            body = json.dumps(call["request"]).encode()
            conn.request("POST", f"/r/{call['rollout_id']}{PATHS[call['client_format']]}", body,
                         {"Content-Type": "application/json", "anthropic-version": "2023-06-01"})
            reply = conn.getresponse()
            data = reply.read()
            if reply.status != 200:
                sys.exit(f"{path}:{n}: the proxy answered {reply.status}: {data[:200]!r}")
            sent += 1
            if sys.stderr.isatty() and sent % 500 == 0:
                print(f"\r{sent} calls sent", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"{sent} calls recorded", file=sys.stderr)


if __name__ == "__main__":
    main()
