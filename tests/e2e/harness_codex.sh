#!/usr/bin/env bash
# The real Codex CLI (npm @openai/codex, tested 0.171.0), unmodified, runs a
# file-writing task end to end: forge-launch --harness codex (local backend)
# → Codex speaks the OpenAI Responses API to forge-proxy → chat completions
# to the scripted fake upstream, which first calls Codex's own exec_command
# tool (with reasoning), then answers in text → forge-verify checks the file.
# Checks what Codex really sends survives translation: developer messages,
# namespace and web_search tools, store:false with include
# reasoning.encrypted_content, and the reasoning item replayed verbatim.
source "$FORGE_SRC/tests/support/real_harness.sh"

require_installed codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex

REASONING="One shell command writes the file."
start_upstream '{"steps": [
  {"reasoning": "'"$REASONING"'",
   "tool_call": {"name": "exec_command", "arguments": {"cmd": "printf '"'"'forge\\n'"'"' > hello.txt"}}},
  {"text": "Created hello.txt."}]}'

launch_task codex gpt-5

# The harness was isolated the way the profile says: its own CODEX_HOME,
# plugins (github.com, chatgpt.com) and analytics off.
config="$SANDBOX_FS/forge/codex-home/config.toml"
[[ -f "$config" ]] || fail "no isolated CODEX_HOME config at $config"
grep -qx 'plugins = false' "$config" || fail "config.toml does not turn plugins off"
python3 - "$config" <<'PY' || fail "config.toml: analytics/provider not as the profile says"
import sys, tomllib
c = tomllib.load(open(sys.argv[1], "rb"))
assert c["analytics"]["enabled"] is False
assert c["features"]["plugins"] is False
p = c["model_providers"][c["model_provider"]]
assert p["wire_api"] == "responses" and p["base_url"].startswith("http://127.0.0.1:"), p
PY
pass "Codex ran with an isolated CODEX_HOME: plugins and analytics off, base_url on loopback"

verify_task
check_calls responses

python3 - "$WORK/calls.jsonl" "$FAKE_LOG" "$REASONING" <<'PY' || fail "the Responses translation lost something Codex sent"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
upstream = [json.loads(l)["body"] for l in open(sys.argv[2])]
reasoning = sys.argv[3]
assert len(calls) == 2, f"{len(calls)} calls, want 2 (tool call, then text)"

first = calls[0]["request"]
# What real Codex sends (the raw exchange is kept as the harness saw it).
assert first["store"] is False and first["stream"] is True
assert "reasoning.encrypted_content" in first["include"]
types = {t["type"] for t in first["tools"]}
assert {"function", "namespace", "web_search"} <= types, types
assert any(i.get("role") == "developer" for i in first["input"]), "no developer items"
# … and what reached the chat upstream: function tools only, developer → system.
up0 = upstream[0]
assert up0["tools"] and all(t["type"] == "function" for t in up0["tools"])
assert "exec_command" in {t["function"]["name"] for t in up0["tools"]}
assert up0["messages"][0]["role"] == "system"
assert [m["role"] for m in up0["messages"]].count("user") >= 1

# Codex got a reasoning item (sealed in encrypted_content) and a function call;
# the raw response as the harness saw it is recorded.
out = calls[0]["response"]["output"]
kinds = [o["type"] for o in out]
assert kinds == ["reasoning", "function_call"], kinds
assert out[0]["encrypted_content"].endswith(reasoning)
assert out[1]["name"] == "exec_command"

# Second call: Codex replays the reasoning item (encrypted_content) and the
# call verbatim; the upstream sees one assistant turn with the reasoning back,
# the tool call, and the command's result under the same call id.
second = calls[1]["request"]["input"]
replayed = [i for i in second if i.get("type") == "reasoning"]
assert replayed and replayed[0]["encrypted_content"] == out[0]["encrypted_content"], replayed
up1 = upstream[1]["messages"]
assistant = [m for m in up1 if m["role"] == "assistant"]
tool = [m for m in up1 if m["role"] == "tool"]
assert len(assistant) == 1 and len(tool) == 1, [m["role"] for m in up1]
assert assistant[0]["reasoning_content"] == reasoning, assistant[0]
call = assistant[0]["tool_calls"][0]
assert call["function"]["name"] == "exec_command"
assert json.loads(call["function"]["arguments"])["cmd"] == "printf 'forge\\n' > hello.txt"
assert tool[0]["tool_call_id"] == call["id"]
assert "exited with code 0" in tool[0]["content"], tool[0]["content"]
# Token ids: the first completion is the reasoning tokens, then the call's.
assert calls[0]["completion_ids"][0] == 900, calls[0]["completion_ids"][:3]
assert calls[1]["finish_reason"] == "stop"
print("codex: translation checks hold")
PY
pass "Responses translation: developer items, namespace/web_search tools, store:false, reasoning replayed via encrypted_content"
echo PASS
