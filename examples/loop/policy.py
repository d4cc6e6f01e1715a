"""The small policy the loop trains, shared by the server and the trainer.

One module so that the server's recorded log-probabilities and the trainer's
come from the same code: `token_logprobs` is the only forward either side
uses to score tokens (float32, one thread, no dropout).

Vocabulary: the 256 byte values, then the special tokens below. The chat
template is one role token, the message's UTF-8 bytes, END, per message;
the generation prompt is ASSISTANT. A completion is the answer's bytes and the
END the model sampled, so the next call's prompt (the conversation with that
answer in it) begins with this call's prompt + completion, token for token
(forge-pack merges such calls into one sample: a "clean" boundary).

The model may only emit printable ASCII, newline and END (`OUTPUT_MASK`, applied
before every log-softmax, on both sides): what it writes is a shell command
for the reference ReACT harness, and these bytes survive its JSON handling.

Weights are stored as safetensors (the reader and writer here are the whole
format: an 8-byte little-endian header length, a JSON header, raw
little-endian tensors), with the model's shape in the metadata."""
import ctypes
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BYTES = 256
BOS, SYSTEM, USER, ASSISTANT, END = 256, 257, 258, 259, 260
VOCAB = 261
ROLE_TOKEN = {"system": SYSTEM, "user": USER, "assistant": ASSISTANT, "tool": USER}
DEFAULT_CONFIG = {"d_model": 64, "layers": 2, "heads": 4, "max_len": 768}


def keep_freed_memory():
    """Keeps memory that torch frees in the process for its next tensors instead of
    returning it to the kernel: glibc hands blocks over 128 KiB back at once (mmap,
    munmap), and every fresh page costs a fault and zeroing, which in a VM is most
    of a forward's time (a 600-token forward: 10x faster here). Linux/glibc only;
    elsewhere a no-op."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
    libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)


def output_mask():
    mask = torch.full((VOCAB,), float("-inf"))
    mask[32:127] = 0.0
    mask[10] = 0.0
    mask[END] = 0.0
    return mask


OUTPUT_MASK = output_mask()


def content_text(content):
    """A message's content as text (a list of parts is joined, as vLLM's templates do)."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def encode_message(role, content):
    if role not in ROLE_TOKEN:
        raise ValueError("unknown message role %r" % role)
    return [ROLE_TOKEN[role]] + list(content_text(content).encode("utf-8")) + [END]


def chat_prompt(messages):
    """The template: BOS, each message as ROLE bytes END, then ASSISTANT."""
    ids = [BOS]
    for m in messages:
        ids += encode_message(m.get("role"), m.get("content"))
    return ids + [ASSISTANT]


def decode(ids):
    """The text of completion ids (special tokens are not text)."""
    return bytes(i for i in ids if i < BYTES).decode("utf-8", errors="replace")


def token_text(i):
    return "<|end|>" if i == END else ("<|%d|>" % i if i >= BYTES else chr(i))


# What a hidden key's score is set to before the softmax: exp of it is 0, as
# of -inf, but this CPU build of torch takes a slow path on -inf (8x slower).
HIDDEN = -1e9


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def project(self, x):
        """Queries, keys and values of x [B, T, d], each [B, heads, T, d / heads]."""
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        return tuple(z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))

    def mix(self, x, q, k, v, hidden):
        """The block's output for x given its queries and the keys and values it attends to;
        hidden [.., T, S] is True where a query may not see a key."""
        b, t, d = x.shape
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        y = (scores.masked_fill(hidden, HIDDEN).softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.down(F.gelu(self.up(self.ln2(x))))

    def forward(self, x):
        q, k, v = self.project(x)
        t = x.shape[1]
        return self.mix(x, q, k, v, torch.ones(t, t, dtype=torch.bool).triu(1))


class Policy(nn.Module):
    """A causal transformer over bytes: learned token and position embeddings."""

    def __init__(self, config=None):
        super().__init__()
        self.config = dict(DEFAULT_CONFIG, **(config or {}))
        d = self.config["d_model"]
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(self.config["max_len"], d)
        self.blocks = nn.ModuleList(Block(d, self.config["heads"]) for _ in range(self.config["layers"]))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)

    def forward(self, ids):
        """ids [B, T] (rows right-padded; positions restart at 0 per row) -> logits [B, T, V]."""
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.tok(ids) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class KVCache:
    """Every layer's keys and values for a fixed number of sequences (slots), for
    sampling one token at a time: `prefill` a slot with a prompt, then `decode` the
    next token of several slots at once. Sampling only: scores come from
    `token_logprobs`, whose full forward the trainer shares."""

    def __init__(self, model, slots):
        c = model.config
        shape = (slots, c["heads"], c["max_len"], c["d_model"] // c["heads"])
        self.model = model
        self.keys = [torch.zeros(shape) for _ in model.blocks]
        self.values = [torch.zeros(shape) for _ in model.blocks]
        self.length = [0] * slots

    def prefill(self, slot, ids):
        """Fills the slot with ids' keys and values; the logits [V] after the last id."""
        m, t = self.model, len(ids)
        x = m.tok(torch.as_tensor([ids])) + m.pos(torch.arange(t).unsqueeze(0))
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        for block, keys, values in zip(m.blocks, self.keys, self.values):
            q, k, v = block.project(x)
            keys[slot, :, :t], values[slot, :, :t] = k[0], v[0]
            x = block.mix(x, q, k, v, causal)
        self.length[slot] = t
        return m.head(m.norm(x[0, -1]))

    def decode(self, slots, tokens):
        """Appends one token to each slot; the logits [len(slots), V] after it."""
        m = self.model
        index = torch.as_tensor(slots)
        at = torch.as_tensor([self.length[s] for s in slots])
        x = (m.tok(torch.as_tensor(tokens)) + m.pos(at)).unsqueeze(1)
        seen = int(at.max()) + 1
        hidden = (torch.arange(seen).unsqueeze(0) > at.unsqueeze(1)).view(len(slots), 1, 1, seen)
        for block, keys, values in zip(m.blocks, self.keys, self.values):
            q, k, v = block.project(x)
            keys[index, :, at], values[index, :, at] = k[:, :, 0], v[:, :, 0]
            x = block.mix(x, q, keys[index, :, :seen], values[index, :, :seen], hidden)
        for s in slots:
            self.length[s] += 1
        return m.head(m.norm(x[:, 0]))


def masked_log_softmax(logits):
    return (logits.float() + OUTPUT_MASK).log_softmax(-1)


def token_logprobs(model, rows):
    """Log-probability of each token of each row given the tokens before it.

    rows: list of id lists. Returns a [B, T] float32 tensor (right-padded with
    0; entry t is log p(row[t] | row[:t]), entry 0 is 0). The one scoring path
    of both the server and the trainer."""
    longest = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), longest, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.as_tensor(r, dtype=torch.long)
    logp = masked_log_softmax(model(ids))
    picked = logp[:, :-1].gather(2, ids[:, 1:].unsqueeze(2)).squeeze(2)
    out = torch.zeros(len(rows), longest)
    out[:, 1:] = picked
    for i, r in enumerate(rows):
        out[i, len(r):] = 0.0
    return out


# --- safetensors, read and written here (no outside package) ---------------

DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64, "U8": np.uint8,
          "I8": np.int8, "I16": np.int16, "U16": np.uint16, "F16": np.float16, "BOOL": np.bool_}


def read_safetensors(path):
    """(tensors as numpy arrays, metadata dict) of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: shorter than a safetensors header" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("%s: header length %d runs past the end of the file" % (path, n))
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if info["dtype"] not in DTYPES:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, info["dtype"]))
        start, end = info["data_offsets"]
        dtype = np.dtype(DTYPES[info["dtype"]]).newbyteorder("<")
        count = int(np.prod(info["shape"])) if info["shape"] else 1
        if (end - start) != count * dtype.itemsize or base + end > len(data):
            raise ValueError("%s: tensor %s: offsets do not match its shape" % (path, name))
        tensors[name] = np.frombuffer(data, dtype=dtype, count=count, offset=base + start).reshape(info["shape"])
    return tensors, meta


def write_safetensors(path, tensors, metadata):
    names = {np.dtype(v): k for k, v in DTYPES.items()}
    header, chunks, offset = {"__metadata__": metadata}, [], 0
    for name, array in tensors.items():
        a = np.ascontiguousarray(array).astype(np.dtype(array.dtype).newbyteorder("<"), copy=False)
        raw = a.tobytes()
        header[name] = {"dtype": names[np.dtype(array.dtype)], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    os.replace(tmp, path)


def save_policy(model, path, extra=None):
    meta = {"config": json.dumps(model.config)}
    meta.update({k: str(v) for k, v in (extra or {}).items()})
    write_safetensors(path, {k: v.detach().numpy() for k, v in model.state_dict().items()}, meta)


def load_policy(path):
    tensors, meta = read_safetensors(path)
    model = Policy(json.loads(meta["config"]))
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()})
    model.eval()
    return model, meta


def new_policy(seed, config=None):
    torch.manual_seed(seed)
    model = Policy(config)
    model.eval()
    return model
