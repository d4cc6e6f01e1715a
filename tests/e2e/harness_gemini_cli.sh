#!/usr/bin/env bash
# The real Gemini CLI (npm @google/gemini-cli, tested 0.61.0), unmodified,
# runs a file-writing task end to end: forge-launch --harness gemini-cli
# (local backend) → Gemini CLI calls models/{m}:streamGenerateContent?alt=sse
# on forge-proxy → chat completions to the scripted fake upstream, which first
# calls the CLI's own write_file tool (with reasoning), then answers in text →
# forge-verify checks the file. Checks what the CLI really sends survives
# translation: systemInstruction, functionCall ids (the proxy supplies them and
# the CLI must answer with them), and the reasoning, which the CLI drops from
# its history but gets back through the proxy's thoughtSignature.
source "$FORGE_SRC/tests/support/real_harness.sh"

require_installed gemini-cli/node_modules/@google/gemini-cli/bundle/gemini.js
command -v node >/dev/null || fail "node (>= 20) is not on PATH"

REASONING="The write_file tool makes the file."
start_upstream '{"steps": [
  {"reasoning": "'"$REASONING"'",
   "tool_call": {"name": "write_file", "arguments": {"file_path": "hello.txt", "content": "forge\n"}}},
  {"text": "Created hello.txt."}]}'

launch_task gemini-cli gemini-2.5-pro

settings="$SANDBOX_FS/forge/gemini-home/.gemini/settings.json"
[[ -f "$settings" ]] || fail "no isolated Gemini settings at $settings"
jq -e '.privacy.usageStatisticsEnabled == false and .telemetry.enabled == false and
       .security.auth.selectedType == "gemini-api-key" and .model.name == "gemini-2.5-pro"' "$settings" >/dev/null ||
  fail "settings.json is not as the profile says: $(cat "$settings")"
[[ "$(jq -r .logs.stdout "$WORK/rollouts.jsonl" | jq -r .response)" == "Created hello.txt." ]] ||
  fail "Gemini CLI's JSON output does not carry the final answer"
pass "Gemini CLI ran with isolated settings (usage statistics and telemetry off) and answered"

verify_task
check_calls gemini

python3 - "$WORK/calls.jsonl" "$FAKE_LOG" "$REASONING" <<'PY' || fail "the Gemini translation lost something the CLI sent"
import base64, json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
upstream = [json.loads(l) for l in open(sys.argv[2])]
reasoning = sys.argv[3]
# An explicit model: no router call, just the two agent turns, both streamed.
assert len(calls) == 2, f"{len(calls)} calls, want 2 (no router call)"
assert all(u["path"] == "/v1/chat/completions" and u["body"]["stream"] for u in upstream)

first = calls[0]["request"]
assert first["systemInstruction"]["parts"], "no systemInstruction"
names = {d["name"] for t in first["tools"] for d in t.get("functionDeclarations", [])}
assert "write_file" in names, names
up0 = upstream[0]["body"]
assert up0["messages"][0]["role"] == "system"
assert up0["messages"][0]["content"] == "\n".join(p["text"] for p in first["systemInstruction"]["parts"])
assert "write_file" in {t["function"]["name"] for t in up0["tools"]}
assert up0["model"] == "gemini-2.5-pro"

# The answer as the CLI saw it: the thought, then the call with the id the
# proxy gave it (the upstream's call id; Gemini itself sends none) and the
# reasoning in its thoughtSignature.
parts = calls[0]["response"]["candidates"][0]["content"]["parts"]
assert parts[0] == {"text": reasoning, "thought": True}, parts[0]
call = [p for p in parts if "functionCall" in p][0]
call_id = call["functionCall"]["id"]
assert call_id, "the proxy made no functionCall id"
assert base64.b64decode(call["thoughtSignature"]).decode() == "forge-reasoning:" + reasoning

# The CLI's next request: the thought part dropped, the call (same id and
# signature) and its functionResponse under that id.
contents = calls[1]["request"]["contents"]
model = [c for c in contents if c.get("role") == "model"]
assert len(model) == 1 and not any(p.get("thought") for p in model[0]["parts"]), model
replayed = [p for p in model[0]["parts"] if "functionCall" in p][0]
assert replayed["functionCall"]["id"] == call_id and replayed["thoughtSignature"] == call["thoughtSignature"]
responses = [p["functionResponse"] for c in contents for p in c["parts"] if "functionResponse" in p]
assert len(responses) == 1 and responses[0]["id"] == call_id, responses

# The upstream saw one assistant turn with the reasoning back, and the result
# under the same call id.
msgs = upstream[1]["body"]["messages"]
assistant = [m for m in msgs if m["role"] == "assistant"]
tool = [m for m in msgs if m["role"] == "tool"]
assert len(assistant) == 1 and len(tool) == 1, [m["role"] for m in msgs]
assert assistant[0]["reasoning_content"] == reasoning, assistant[0]
assert assistant[0]["tool_calls"][0]["id"] == call_id == tool[0]["tool_call_id"]
assert json.loads(assistant[0]["tool_calls"][0]["function"]["arguments"]) == {"file_path": "hello.txt", "content": "forge\n"}
assert "Successfully created" in tool[0]["content"], tool[0]["content"]
assert calls[0]["completion_ids"][0] == 900, calls[0]["completion_ids"][:3]  # reasoning tokens first
print("gemini: translation checks hold")
PY
pass "Gemini translation: systemInstruction, proxy-supplied call ids answered, reasoning back through thoughtSignature"
echo PASS
