#!/usr/bin/env python3
"""One screenshot-heavy rollout through forge-proxy, for bench/store_images.sh.

  store_images.py PORT FORMAT ROLLOUT [TURNS [EVERY]]

TURNS calls (default 30), each resending the whole conversation as a harness
does; every EVERY-th turn (default 3; 0: never, the text-only baseline of
the same shape) adds a new screenshot: a 1280x800 PNG
drawn like a desktop (flat windows, text-like rows, a noisy photo region), a
different one each time (so TURNS/EVERY distinct images). FORMAT is the
client's wire format, each with the image where that harness puts it:
  chat       a user message with an image_url part (data: URI)
  anthropic  a tool_result holding an image block (Claude Code's Read of a PNG,
             or a computer-use screenshot), with cache_control on the last
             block of the last message, as Claude Code marks it (so the message
             that held the marker is sent again without it)
  responses  a user message item with an input_image part (data: URL)
  gemini     a user content with an inlineData part
Prints, on stdout: the bytes of the distinct images (the PNG files), their
count, the calls made, and the image bytes summed over every request (what
storing each request whole would store).
Talks to 127.0.0.1 only.
"""
import base64
import json
import random
import struct
import sys
import urllib.request
import zlib


def png(width, height, rows):
    """A PNG (8-bit RGB, filter 0 on every row) of the given rows (bytes, width*3 each)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def screenshot(seed, width=1280, height=800):
    rng = random.Random(seed)
    background = bytes([rng.randrange(200, 256) for _ in range(3)])
    canvas = [bytearray(background * width) for _ in range(height)]
    for _ in range(6):  # windows: a title bar, a body with rows of "text"
        x0, y0 = rng.randrange(0, width - 300), rng.randrange(0, height - 200)
        w, h = rng.randrange(200, min(700, width - x0)), rng.randrange(120, min(500, height - y0))
        fill = bytes([rng.randrange(230, 256)] * 3)
        for y in range(y0, y0 + h):
            canvas[y][x0 * 3:(x0 + w) * 3] = (b"\x30\x50\x90" if y < y0 + 18 else fill) * w
        for y in range(y0 + 24, y0 + h - 8, 14):  # text-like rows: dark runs of varying length
            x = x0 + 8
            while x < x0 + w - 40:
                run = rng.randrange(3, 30)
                for yy in range(y, y + 8):
                    canvas[yy][x * 3:(x + run) * 3] = b"\x20\x20\x20" * run
                x += run + rng.randrange(3, 8)
    px, py = rng.randrange(0, width - 160), rng.randrange(0, height - 120)  # a photo: noise
    for y in range(py, py + 120):
        canvas[y][px * 3:(px + 160) * 3] = bytes(rng.randrange(256) for _ in range(480))
    return png(width, height, [bytes(r) for r in canvas])


def post(port, rollout, path, body, headers):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/r/{rollout}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def run(port, fmt, rollout, turns, every):
    images, sent, resent_bytes = [], 0, 0
    chat = [{"role": "system", "content": "You operate a desktop. Look at each screenshot and act."}]
    claude = []
    items = []
    contents = []
    for turn in range(turns):
        image = None
        if every and turn % every == 0:
            image = screenshot(1000 + turn)
            images.append(image)
        b64 = base64.b64encode(image).decode() if image else None
        text = f"Turn {turn}: what next?"
        if fmt == "chat":
            content = [{"type": "text", "text": text}]
            if image:
                content.append({"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64}})
            chat.append({"role": "user", "content": content})
            answer = post(port, rollout, "/v1/chat/completions", {"model": "m", "messages": chat}, {})
            chat.append({"role": "assistant", "content": answer["choices"][0]["message"]["content"]})
        elif fmt == "anthropic":
            if claude:  # the previous turn's tool call is answered by a tool_result (with the screenshot)
                result = [{"type": "text", "text": text}]
                if image:
                    result.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}})
                blocks = [{"type": "tool_result", "tool_use_id": f"toolu_{turn - 1}", "content": result}]
            else:
                blocks = [{"type": "text", "text": text}]
                if image:
                    blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}})
            for m in claude:  # the cache marker moves to the newest message
                if isinstance(m["content"], list):
                    for b in m["content"]:
                        b.pop("cache_control", None)
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
            claude.append({"role": "user", "content": blocks})
            answer = post(port, rollout, "/v1/messages", {"model": "m", "max_tokens": 1024, "messages": claude},
                          {"anthropic-version": "2023-06-01"})
            said = "".join(b.get("text", "") for b in answer["content"])
            claude.append({"role": "assistant", "content": [
                {"type": "text", "text": said},
                {"type": "tool_use", "id": f"toolu_{turn}", "name": "computer", "input": {"action": "screenshot"}}]})
        elif fmt == "responses":
            content = [{"type": "input_text", "text": text}]
            if image:
                content.append({"type": "input_image", "image_url": "data:image/png;base64," + b64})
            items.append({"type": "message", "role": "user", "content": content})
            answer = post(port, rollout, "/v1/responses", {"model": "m", "input": items, "store": False}, {})
            for out in answer["output"]:
                if out["type"] == "message":
                    items.append({"type": "message", "role": "assistant", "content": out["content"]})
        elif fmt == "gemini":
            parts = [{"text": text}]
            if image:
                parts.append({"inlineData": {"mimeType": "image/png", "data": b64}})
            contents.append({"role": "user", "parts": parts})
            answer = post(port, rollout, "/v1beta/models/m:generateContent", {"contents": contents}, {})
            contents.append(answer["candidates"][0]["content"])
        else:
            raise SystemExit(f"unknown format {fmt}")
        sent += 1
        resent_bytes += sum(len(i) for i in images)
    return sum(len(i) for i in images), len(images), sent, resent_bytes


def main():
    port, fmt, rollout = sys.argv[1], sys.argv[2], sys.argv[3]
    turns = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    every = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    print(*run(port, fmt, rollout, turns, every))


if __name__ == "__main__":
    main()
