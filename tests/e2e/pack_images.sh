#!/usr/bin/env bash
# Screenshots as training data, end to end (#56): a vision-language policy
# server (the fake upstream's --vl mode: Qwen-VL placeholder expansion and
# vLLM's token fields) behind forge-proxy; two rollouts that resend their
# screenshots every turn, one as OpenAI chat (image_url data URIs), one as
# Anthropic Messages (image blocks with a base64 source; bench/store_images.sh
# sends them inside tool_results, as Claude Code does). Then:
#  - the store holds each image once (blobs named by the images' SHA-256);
#  - forge-pack writes sft-tokens, sft-messages (TRL), llamafactory and rl
#    with the images once each, named by hash, and images.json;
#  - an independent reader (below: its own PNG header parse and its own
#    Qwen2-VL resize rule) rebuilds each sample's expanded token sequence
#    from the collapsed ids, the image files and the processor description,
#    and finds it equal to the written ids and to the prompt + completion
#    ids the server returned for that rollout's last call;
#  - a processor description that does not match the server's drops every
#    image sample as image_tokens_mismatch.
source "$FORGE_SRC/tests/support/proxy_env.sh"
py3=/usr/bin/python3
[ -x "$py3" ] || py3=$(command -v python3)

FAKE_LOG=$WORK/vl.log
python3 "$FORGE_SRC/tests/fake_upstream/fake_upstream.py" --vl --port-file "$WORK/vl.port" --log "$FAKE_LOG" &
PIDS+=($!)
for _ in $(seq 1 100); do [ -f "$WORK/vl.port" ] && break; sleep 0.05; done
FAKE_PORT=$(cat "$WORK/vl.port")
store=$WORK/forge.db
start_proxy "$store" --upstream "http://127.0.0.1:$FAKE_PORT" --open

"$py3" - "$PROXY" <<'PY'
import base64, json, struct, sys, urllib.request, zlib
proxy = sys.argv[1]

def png(width, height, seed):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    rows = b"".join(b"\x00" + bytes((x * seed + y) % 256 for x in range(width * 3)) for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))

def post(rollout, path, body, headers={}):
    req = urllib.request.Request(f"{proxy}/r/{rollout}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **headers})
    return json.load(urllib.request.urlopen(req, timeout=30))

sizes = [(320, 200), (200, 480), (1000, 90)]
chat = [{"role": "system", "content": "Operate the desktop."}]
for turn in range(7):
    content = [{"type": "text", "text": f"turn {turn}"}]
    if turn % 3 == 0:
        w, h = sizes[turn // 3]
        content.append({"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                             base64.b64encode(png(w, h, turn + 1)).decode()}})
    chat.append({"role": "user", "content": content})
    answer = post("vl-chat", "/v1/chat/completions", {"model": "m", "messages": chat})
    chat.append({"role": "assistant", "content": answer["choices"][0]["message"]["content"]})

claude = []
for turn in range(5):
    blocks = [{"type": "text", "text": f"look {turn}"}]
    if turn in (0, 2):
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                     "data": base64.b64encode(png(240, 160, 7 + turn)).decode()}})
    claude.append({"role": "user", "content": blocks})
    answer = post("vl-claude", "/v1/messages", {"model": "m", "max_tokens": 256, "messages": claude},
                  {"anthropic-version": "2023-06-01"})
    text = "".join(b.get("text", "") for b in answer["content"])
    claude.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
PY
pass "two rollouts with screenshots sent through forge-proxy"
kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true

# The store: 5 distinct images, each one blob whose hash is the image's SHA-256.
images=$(sqlite3 "$store" "SELECT count(*) FROM blobs WHERE hex(hash) IN (SELECT DISTINCT hex(substr(images, 1 + 32 * k.n, 32)) FROM calls, (SELECT 0 AS n UNION SELECT 1 UNION SELECT 2) k WHERE images IS NOT NULL)")
[ "$images" = 5 ] || fail "the store names $images image blobs, want 5"
[ "$(sqlite3 "$store" "SELECT length(images) / 32 FROM calls WHERE rollout_id = 'vl-chat' ORDER BY seq DESC LIMIT 1")" = 3 ] \
  || fail "the chat rollout's last call does not name its 3 images"
pass "each image stored once, every call naming the images it sent"

printf '%s\n' '{"rollout_id": "vl-chat", "task_id": "t", "reward": 1}' '{"rollout_id": "vl-claude", "task_id": "t", "reward": 0}' >"$WORK/rollouts.jsonl"
processor="qwen2-vl,max_pixels=1003520"  # the server's (vl_tokens.py); min_pixels 3136 as the family's
out=$WORK/out
for format in sft-tokens sft-messages llamafactory; do
  "$FORGE_BIN/forge-pack" --store "$store" --format $format --processor "$processor" --images-dir "$out/images" \
    --stats "$WORK/$format.stats" "$WORK/rollouts.jsonl" >"$WORK/$format.jsonl" 2>"$WORK/$format.err" \
    || fail "forge-pack --format $format: $(cat "$WORK/$format.err")"
done
"$FORGE_BIN/forge-pack" --store "$store" --format rl --processor "$processor" --out-dir "$out/rl" \
  --images-dir "$out/images" "$WORK/rollouts.jsonl" >"$WORK/rl.jsonl" 2>"$WORK/rl.err" \
  || fail "forge-pack --format rl: $(cat "$WORK/rl.err")"

"$py3" - "$WORK" "$out/images" "$FAKE_LOG.ids" <<'PY'
import hashlib, json, math, os, struct, sys
import numpy as np
work, images_dir, server_ids = sys.argv[1:]
index = json.load(open(os.path.join(images_dir, "images.json")))
proc = index["processor"]
assert proc["family"] == "qwen2-vl" and proc["max_pixels"] == 1003520, proc
PAD, START, END = proc["image_token_id"], proc["vision_start_id"], proc["vision_end_id"]

def image_tokens(path):
    data = open(path, "rb").read()
    assert hashlib.sha256(data).hexdigest() == os.path.basename(path).split(".")[0], f"{path}: not named by its hash"
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    f = proc["patch_size"] * proc["merge_size"]
    h, w = round(height / f) * f, round(width / f) * f
    if h * w > proc["max_pixels"]:
        beta = math.sqrt(height * width / proc["max_pixels"])
        h, w = max(f, math.floor(height / beta / f) * f), max(f, math.floor(width / beta / f) * f)
    elif h * w < proc["min_pixels"]:
        beta = math.sqrt(proc["min_pixels"] / (height * width))
        h, w = math.ceil(height * beta / f) * f, math.ceil(width * beta / f) * f
    entry = index["images"][os.path.basename(path).split(".")[0]]
    assert (entry["width"], entry["height"], entry["processed_width"], entry["processed_height"]) == (width, height, w, h), entry
    return (h // proc["patch_size"]) * (w // proc["patch_size"]) // proc["merge_size"] ** 2

def rebuild(ids, paths):
    """The collapsed sequence (one pad an image) expanded again from the image files."""
    collapsed = [t for i, t in enumerate(ids) if not (t == PAD and i > 0 and ids[i - 1] == PAD)]
    assert collapsed.count(PAD) == len(paths), f"{collapsed.count(PAD)} image runs for {len(paths)} images"
    out, k = [], 0
    for t in collapsed:
        if t == PAD:
            assert out[-1] == START
            out += [PAD] * image_tokens(paths[k]); k += 1
        else:
            out.append(t)
    return out

said = [json.loads(l) for l in open(server_ids)]
said = [s["prompt_token_ids"] + s["token_ids"] for s in said]

def check(ids, paths, what):
    assert rebuild(ids, paths) == ids, f"{what}: the rebuilt sequence differs from the written ids"
    assert ids in said, f"{what}: the written ids are no call's prompt + completion as the server returned them"

rows = [json.loads(l) for l in open(f"{work}/sft-tokens.jsonl")]
assert {r["rollout_id"] for r in rows} == {"vl-chat", "vl-claude"}, rows
assert sum(len(r.get("images", [])) for r in rows) == 5, [r.get("images") for r in rows]
for r in rows:
    check(r["input_ids"], r["images"], f"sft-tokens {r['rollout_id']}")
    for (offset, length), path in zip(r["image_placeholders"], r["images"]):
        assert r["input_ids"][offset - 1] == START and r["input_ids"][offset + length] == END
        assert length == image_tokens(path)

for name, count in (("sft-messages", lambda m: sum(isinstance(c, list) and sum(p.get("type") == "image" for p in c) or 0
                                                  for c in (x["content"] for x in m))),
                    ("llamafactory", lambda m: sum(x["content"].count("<image>") for x in m if isinstance(x["content"], str)))):
    rows = [json.loads(l) for l in open(f"{work}/{name}.jsonl")]
    assert len(rows) == 2, name
    for r in rows:
        assert count(r["messages"]) == len(r["images"]) > 0, f"{name}: {count(r['messages'])} image marks, {len(r['images'])} images"
        assert all(os.path.exists(p) for p in r["images"])
    assert "data:image" not in json.dumps(rows) and "iVBORw0KGgo" not in json.dumps(rows), f"{name}: base64 left in the messages"

def safetensors(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    t = {k: np.frombuffer(blob[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                          dtype={"I32": np.int32, "U8": np.uint8, "F32": np.float32}[v["dtype"]])
         for k, v in header.items() if k != "__metadata__"}
    return header["__metadata__"], t

rl_rows = 0
for entry in (json.loads(l) for l in open(f"{work}/rl.jsonl")):
    meta, t = safetensors(entry["file"])
    assert json.loads(meta["images"]) == entry["images"] and json.loads(meta["processor"])["family"] == "qwen2-vl"
    cu = t["cu_seqlens"]
    for i, paths in enumerate(entry["images"]):
        check(t["input_ids"][cu[i]:cu[i + 1]].tolist(), paths, f"rl row {i} of {entry['file']}")
        rl_rows += 1
assert rl_rows == 2, rl_rows
print("reader: every sample rebuilt equal to the server's ids")
PY
[ $? -eq 0 ] || fail "the independent reader disagrees"
pass "sft-tokens, sft-messages (TRL), llamafactory and rl: images once by hash; ids rebuilt and equal to the server's"
[ "$(ls "$out/images" | grep -c '\.png$')" = 5 ] || fail "$(ls "$out/images" | grep -c '\.png$') image files, want 5"

"$FORGE_BIN/forge-pack" --store "$store" --format sft-tokens --processor qwen2-vl,min_pixels=200704 --images-dir "$WORK/other" \
  --stats "$WORK/mismatch.stats" "$WORK/rollouts.jsonl" >"$WORK/mismatch.jsonl" 2>"$WORK/mismatch.err" || true
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['dropped'].get('image_tokens_mismatch') == 2 else 1)" \
  "$WORK/mismatch.stats" || fail "a processor unlike the server's: $(cat "$WORK/mismatch.stats")"
grep -q "placeholder tokens" "$WORK/mismatch.err" || fail "no reason given for the mismatch: $(cat "$WORK/mismatch.err")"
[ ! -s "$WORK/mismatch.jsonl" ] || fail "mismatched samples were written"
pass "a processor description unlike the server's drops each image sample, saying why"
