#!/usr/bin/env bash
# The real Claude Code sends an image through forge-proxy (#56): its Read
# tool opens a PNG and the next request carries it as an image block (base64
# source) in the tool_result. Claude Code runs headless against the proxy
# (the scripted model: step 0 a Read of the PNG, step 1 a final text),
# inside a loopback-only network namespace. Checks: the proxy's upstream
# request held the image as a chat image_url data URI; the store keeps it
# once, as a blob whose hash is its SHA-256, named by the call that sent it
# and by every later one; forge-pack writes it once, named by its hash, with
# the TRL sample's image part.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
source "$FORGE_SRC/tests/support/scripted_model.sh"
source "$FORGE_SRC/tests/support/loopback_netns.sh"
install_dir="${FORGE_HARNESS_INSTALL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge/harnesses}"
claude="$install_dir/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
[[ -x "$claude" ]] || { echo "SKIP: $claude missing: run scripts/install-harnesses.sh"; exit 77; }

harness_test forge-cc-image "cc-image-$$" local proxy.err claude.err
mkdir -p "$work/cwd"
# A 48x32 PNG of its own bytes (no image library needed).
python3 - "$work/cwd/shot.png" <<'PY'
import struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
w, h = 48, 32
rows = b"".join(b"\x00" + bytes((x * 7 + y * 3) % 256 for x in range(w * 3)) for y in range(h))
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                              chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
PY
cat >"$work/scenario.json" <<EOF
{"steps": [
  {"tool_call": {"name": "Read", "arguments": {"file_path": "$work/cwd/shot.png"}}},
  {"text": "The screenshot shows a gradient."}
]}
EOF
start_scripted_model "$work" --open --max-tokens-cap 4096

echo "== claude -p reads a PNG"
# The environment harnesses/claude-code.json gives it.
(cd "$work/cwd" && IS_SANDBOX=1 ANTHROPIC_BASE_URL="$proxy/r/cc-image" ANTHROPIC_API_KEY=forge-test \
  ANTHROPIC_MODEL=forge-policy ANTHROPIC_SMALL_FAST_MODEL=forge-policy ANTHROPIC_DEFAULT_HAIKU_MODEL=forge-policy \
  DISABLE_BUG_COMMAND=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 \
  HOME="$work/home" timeout 180 "$claude" -p "Look at shot.png and describe it." \
  --dangerously-skip-permissions --output-format json) >"$work/claude.json" 2>"$work/claude.err" ||
  fail "claude exit $?: $(head -c 1000 "$work/claude.json")"
jq -e '.is_error == false and .result == "The screenshot shows a gradient."' "$work/claude.json" >/dev/null ||
  fail "claude's result: $(head -c 1000 "$work/claude.json")"
kill -TERM "${pids[1]}"; wait "${pids[1]}" 2>/dev/null || true

echo "== the image in the upstream request, and once in the store"
python3 - "$work/fake.log" <<'PY' || fail "no image_url data URI in the upstream requests"
import json, sys
bodies = [json.loads(l)["body"] for l in open(sys.argv[1])]
sys.exit(0 if any("data:image/png;base64," in json.dumps(b) for b in bodies) else 1)
PY
db="$work/forge.db"
named=$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE rollout_id = 'cc-image' AND length(images) = 32")
[[ "$named" -ge 1 ]] || fail "no call names an image: $(sqlite3 "$db" "SELECT seq, length(images) FROM calls")"
[[ "$(sqlite3 "$db" "SELECT count(DISTINCT images) FROM calls WHERE images IS NOT NULL")" == 1 ]] ||
  fail "calls name different images"
digest=$(sqlite3 "$db" "SELECT lower(hex(images)) FROM calls WHERE images IS NOT NULL LIMIT 1")
[[ "$(sqlite3 "$db" "SELECT count(*) FROM blobs WHERE lower(hex(hash)) = '$digest'")" == 1 ]] ||
  fail "the image's blob is not stored once under its SHA-256"
# Claude Code may re-encode an image; when it sends the file as it is, the digest is the file's.
if [[ "$digest" == "$(sha256sum "$work/cwd/shot.png" | cut -d' ' -f1)" ]]; then
  echo "the image is the file's exact bytes"
else
  echo "note: Claude Code re-encoded the PNG"
fi

echo "== forge-pack: the image once, by hash, with TRL's image part"
echo '{"rollout_id": "cc-image", "task_id": "t", "reward": 1}' >"$work/rollouts.jsonl"
"$FORGE_BIN/forge-pack" --store "$db" --format sft-messages --images-dir "$work/images" "$work/rollouts.jsonl" \
  >"$work/sft.jsonl" 2>"$work/pack.err" || fail "forge-pack: $(cat "$work/pack.err")"
[[ -f "$work/images/$digest.png" ]] || fail "no $digest.png written: $(ls "$work/images")"
jq -e --arg p "$work/images/$digest.png" '.images == [$p] and ([.messages[].content | arrays | .[] | select(.type == "image")] | length) == 1' \
  "$work/sft.jsonl" >/dev/null || fail "TRL sample: $(head -c 2000 "$work/sft.jsonl")"
echo "ok"
