#!/usr/bin/env python3
"""A tiny MCP server over stdio (newline-delimited JSON-RPC 2.0), stdlib only.

One tool, secret_code, returns a fixed code. Every request's method is
appended to the log file given as the first argument, so a test can see the
harness really called the tool.
"""
import json
import sys

LOG = sys.argv[1] if len(sys.argv) > 1 else None
CODE = "mcp-code-7391"


def log(line):
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")


def answer(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    message = json.loads(line)
    method = message.get("method", "")
    log(method)
    if "id" not in message:
        continue  # a notification
    if method == "initialize":
        version = message.get("params", {}).get("protocolVersion", "2025-03-26")
        answer(message["id"], {"protocolVersion": version, "capabilities": {"tools": {}},
                               "serverInfo": {"name": "codes", "version": "1.0"}})
    elif method == "tools/list":
        answer(message["id"], {"tools": [{"name": "secret_code", "description": "Returns the secret code of this task.",
                                          "inputSchema": {"type": "object", "properties": {}}}]})
    elif method == "tools/call":
        log("called " + message.get("params", {}).get("name", ""))
        answer(message["id"], {"content": [{"type": "text", "text": CODE}], "isError": False})
    elif method == "ping":
        answer(message["id"], {})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                     "error": {"code": -32601, "message": "method not found"}}) + "\n")
        sys.stdout.flush()
