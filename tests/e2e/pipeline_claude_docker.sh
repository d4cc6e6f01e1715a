#!/usr/bin/env bash
# The whole pipeline with a real harness in a container (issue 9, Show 2):
# Claude Code from npm runs inside forge-node:bookworm (debootstrap + Debian's
# nodejs, scripts/make-node-image.sh), mounted read-only from the host's
# install dir, through forge-proxy in front of the scripted fake upstream on
# 127.0.0.1, on a Harbor task directory; forge-verify runs the task's tests in
# the held container; forge-pack writes SFT and RL data. Checks the SFT sample
# holds the tool-use conversation and the RL batch the recorded token ids.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
source "$FORGE_SRC/tests/support/scripted_model.sh"
install_dir="${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}"
claude="$install_dir/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
[[ -x "$claude" ]] || { echo "FAIL: $claude missing: run scripts/install-harnesses.sh" >&2; exit 1; }
source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker
image="${FORGE_NODE_IMAGE:-forge-node:bookworm}"

harness_test forge-ccd "cc-docker-$$" docker launch.err verify.err pack.err proxy.err

echo "== image $image"
FORGE_NODE_IMAGE="$image" bash "$FORGE_SRC/scripts/make-node-image.sh" || fail "make-node-image.sh"

cat >"$work/scenario.json" <<'EOF'
{"steps": [
  {"tool_call": {"name": "Write", "arguments": {"file_path": "/work/hello.txt", "content": "forge"}}},
  {"text": "Created /work/hello.txt."}
]}
EOF
start_scripted_model "$work"

echo "== forge-launch --backend docker --harness claude-code"
task="$FORGE_SRC/tests/e2e/tasks/claude-hello"
"$FORGE_BIN/forge-launch" --backend docker --network proxy-only --image "$image" --store "$work/forge.db" \
  --run-id "$run" --harness claude-code --harness-install-dir "$install_dir" --proxy "$proxy" \
  --hold "$task" >"$work/rollouts.jsonl" 2>"$work/launch.err" || fail "forge-launch exit $?"
rollout=$(jq -r .rollout_id "$work/rollouts.jsonl")
[[ "$(jq -r .outcome "$work/rollouts.jsonl")" == ok ]] ||
  fail "outcome: $(jq -c '{outcome, error, exit_code, logs}' "$work/rollouts.jsonl" | head -c 2000)"
jq -r .logs.stdout "$work/rollouts.jsonl" | jq -e '.is_error == false and .num_turns == 2' >/dev/null ||
  fail "claude's result: $(jq -r .logs.stdout "$work/rollouts.jsonl" | head -c 1000)"
box=$(jq -r .sandbox.id "$work/rollouts.jsonl")
# The harness came from the read-only mount, not from the image.
docker inspect "$box" | jq -e --arg src "$install_dir" \
  '.[0].Mounts | any(.Source == $src and .Destination == "/opt/forge/harnesses" and .RW == false)' >/dev/null ||
  fail "no read-only harness mount: $(docker inspect "$box" | jq -c '.[0].Mounts')"
docker exec "$box" test ! -e /usr/local/bin/claude || fail "claude found in the image"
[[ "$(docker exec "$box" cat /work/hello.txt)" == forge ]] || fail "hello.txt not written in the container"

echo "== forge-verify in the held container"
"$FORGE_BIN/forge-verify" --store "$work/forge.db" "$work/rollouts.jsonl" >"$work/verdicts.jsonl" \
  2>"$work/verify.err" || fail "forge-verify exit $?: $(jq -c .verdict "$work/verdicts.jsonl" | head -c 1500)"
[[ "$(jq -r .verdict.outcome "$work/verdicts.jsonl")" == passed ]] || fail "verdict: $(cat "$work/verdicts.jsonl")"
[[ -z "$(docker ps -aq --filter "label=forge.run=$run")" ]] || fail "held container not released"

echo "== the store: every call under the rollout, with token ids"
upstream_calls=$(grep -c '"/v1/chat/completions"' "$work/fake.log")
[[ "$(sqlite3 "$work/forge.db" "SELECT count(*) FROM calls WHERE rollout_id = '$rollout' AND client_format = 'anthropic' AND completion_ids IS NOT NULL")" == "$upstream_calls" ]] ||
  fail "store and upstream disagree on the calls ($upstream_calls upstream)"
"$FORGE_BIN/forge-proxy" --store "$work/forge.db" --dump-rollout "$rollout" >"$work/calls.jsonl"

echo "== forge-pack: SFT and RL"
"$FORGE_BIN/forge-pack" -q --store "$work/forge.db" --format sft-messages "$work/verdicts.jsonl" \
  >"$work/sft.jsonl" 2>"$work/pack.err" || fail "forge-pack sft exit $?"
"$FORGE_BIN/forge-pack" -q --store "$work/forge.db" --format rl --out-dir "$work/rl" \
  --stats "$work/rl-stats.json" "$work/verdicts.jsonl" >"$work/rl-index.jsonl" 2>>"$work/pack.err" ||
  fail "forge-pack rl exit $?"
py=/usr/bin/python3  # Debian's, with python3-numpy (scripts/bootstrap.sh)
[ -x "$py" ] || py=$(command -v python3)
"$py" - "$work/sft.jsonl" "$work/rl-index.jsonl" "$work/calls.jsonl" "$rollout" <<'PY' || fail "packed data"
import json, struct, sys
import numpy as np

sft = [json.loads(l) for l in open(sys.argv[1])]
index = [json.loads(l) for l in open(sys.argv[2])]
calls = [json.loads(l) for l in open(sys.argv[3])]
J = lambda v: json.loads(v) if isinstance(v, str) else v
rollout = sys.argv[4]
agent = [c for c in calls if not c["side_call"]]
assert len(agent) == 2, len(agent)

# SFT: the tool-use conversation, as the policy saw it (chat form).
assert len(sft) >= 1 and all(r["rollout_id"] == rollout for r in sft), sft
msgs = sft[-1]["messages"]
roles = [m["role"] for m in msgs]
assert roles[0] == "system" and "user" in roles, roles
calls_made = [tc for m in msgs if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
assert len(calls_made) == 1, msgs
fn = calls_made[0]["function"]
assert fn["name"] == "Write", fn
assert json.loads(fn["arguments"]) == {"file_path": "/work/hello.txt", "content": "forge"}, fn
tool_msgs = [m for m in msgs if m["role"] == "tool"]
assert len(tool_msgs) == 1 and tool_msgs[0]["tool_call_id"] == calls_made[0]["id"], tool_msgs
assert "hello.txt" in json.dumps(tool_msgs[0]["content"]), tool_msgs
assert msgs[-1]["role"] == "assistant" and "Created /work/hello.txt." in json.dumps(msgs[-1]["content"]), msgs[-1]
assert any(t["function"]["name"] == "Write" for t in sft[-1]["tools"]), "tools missing"

# RL: the recorded token ids, trained on exactly the completion tokens.
def read(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    dt = {"I32": np.int32, "U8": np.uint8, "F32": np.float32, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(blob[base + b:base + e], dtype=dt[info["dtype"]]).reshape(info["shape"])
    return header.get("__metadata__", {}), out

rows = []
for entry in index:
    meta, t = read(entry["file"])
    cu = t["cu_seqlens"]
    for r in range(len(cu) - 1):
        s, e = cu[r], cu[r + 1]
        rows.append((t["input_ids"][s:e].tolist(), t["loss_mask"][s:e].astype(bool)))
assert rows, "no RL rows"
ids, mask = rows[0]
masked = [tok for tok, m in zip(ids, mask) if m]
want_completion = [tok for c in agent for tok in c["completion_ids"]]
if len(rows) == 1:
    # Prefix-merged: call 0's prompt, then both completions with the second
    # call's new prompt tokens (the tool result) between them, unmasked.
    assert ids[:len(agent[0]["prompt_ids"])] == agent[0]["prompt_ids"], "prompt ids differ from the store"
    assert masked == want_completion, (masked, want_completion)
    assert ids == agent[1]["prompt_ids"] + agent[1]["completion_ids"], "merged row differs from the last call"
else:
    # One row per call: prompt ids unmasked, then the completion ids masked.
    assert len(rows) == len(agent), len(rows)
    for (ids, mask), c in zip(rows, agent):
        assert ids == c["prompt_ids"] + c["completion_ids"], c["seq"]
        assert [tok for tok, m in zip(ids, mask) if m] == c["completion_ids"], c["seq"]
print(f"sft: {len(msgs)} messages with the Write call and its result; rl: {len(rows)} row(s), "
      f"{len(want_completion)} completion tokens as recorded")
PY
echo "pipeline_claude_docker: ok"
