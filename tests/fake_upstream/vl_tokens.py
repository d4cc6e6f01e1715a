"""A Qwen-VL-shaped tokenization for the fake upstream's --vl mode (#56).

Not a real tokenizer: a deterministic one with the properties forge relies
on. A chat request is rendered as Qwen's template renders it, message by
message (<|im_start|> role ... <|im_end|>), and an image part (an image_url
data: URI) becomes <|vision_start|>, N x <|image_pad|>, <|vision_end|>, with N
from the image's size by Qwen2-VL's resize rule, as vLLM expands it. Text is
one id a character. A completion is its text's ids and <|im_end|>, so the
next request's prompt extends this prompt + completion exactly (the prefix
rule). vLLM's mm_placeholders gives where each image's run is.
"""
import base64
import json
import math
import struct

IM_START, IM_END = 151644, 151645
VISION_START, VISION_END, IMAGE_PAD = 151652, 151653, 151655
PATCH, MERGE, MIN_PIXELS, MAX_PIXELS = 14, 2, 56 * 56, 14 * 14 * 4 * 1280  # Qwen2-VL's processor defaults


def text_ids(text):
    return [100 + (ord(c) % 50) for c in text]


def png_size(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return struct.unpack(">II", data[16:24])  # width, height


def smart_resize(height, width, factor=PATCH * MERGE, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS):
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def image_tokens(url):
    width, height = png_size(base64.b64decode(url.split(",", 1)[1]))
    h, w = smart_resize(height, width)
    return (h // PATCH) * (w // PATCH) // (MERGE * MERGE)


def content_ids(content, ids, placeholders):
    if isinstance(content, str):
        ids += text_ids(content)
        return
    for part in content or []:
        if part.get("type") == "image_url":
            n = image_tokens(part["image_url"]["url"])
            ids.append(VISION_START)
            placeholders.append({"offset": len(ids), "length": n})
            ids += [IMAGE_PAD] * n
            ids.append(VISION_END)
        elif "text" in part:
            ids += text_ids(part["text"])


def prompt(body):
    """(prompt ids, mm_placeholders) of a chat request, with the generation prompt."""
    ids, placeholders = [], []
    for m in body.get("messages", []):
        ids += [IM_START] + text_ids(m.get("role", ""))
        content_ids(m.get("content"), ids, placeholders)
        for call in m.get("tool_calls") or []:
            ids += text_ids(json.dumps(call.get("function", {}), sort_keys=True))
        ids.append(IM_END)
    ids += [IM_START] + text_ids("assistant")
    return ids, {"image": placeholders}


def completion(text):
    return text_ids(text) + [IM_END]
