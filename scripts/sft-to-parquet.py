#!/usr/bin/env python3
"""Convert forge-pack `--format sft-messages` JSONL to parquet for veRL's multi-turn SFT.

veRL's MultiTurnSFTDataset reads parquet only (pandas.read_parquet), with the
conversation in a `messages` column and tool schemas in `tools`. Arrow needs
one schema for every row, so fields whose shape varies from row to row are
stored as JSON strings:
  - tool-call `arguments` are already strings in forge-pack's output;
  - `tools` (schemas differ per tool) is written as one JSON string per row;
    set veRL's data.multiturn.tools_key to a column your template reads, or
    json.loads it in a custom dataset.
Message fields that are absent in some rows become nulls.

Usage:
  forge-pack --store forge.db --format sft-messages rollouts.jsonl > sft.jsonl
  python3 scripts/sft-to-parquet.py sft.jsonl sft.parquet

Needs pyarrow (`pip install pyarrow`; Debian 12 does not package it).
Then point veRL at it:
  data.train_files=sft.parquet data.multiturn.enable=true data.multiturn.messages_key=messages
"""
import json
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 64
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        print("sft-to-parquet: pyarrow is not installed (pip install pyarrow)", file=sys.stderr)
        return 69

    message_type = pa.struct([
        ("role", pa.string()),
        ("content", pa.string()),
        ("reasoning_content", pa.string()),
        ("tool_call_id", pa.string()),
        ("name", pa.string()),
        ("tool_calls", pa.list_(pa.struct([
            ("id", pa.string()),
            ("type", pa.string()),
            ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
        ]))),
    ])
    schema = pa.schema([
        ("messages", pa.list_(message_type)),
        ("tools", pa.string()),
        ("rollout_id", pa.string()),
        ("task_id", pa.string()),
        ("sample_index", pa.int32()),
        ("from_messages", pa.bool_()),
        ("reward", pa.float64()),
    ])

    def text(content):
        # Content parts (lists) are kept as their JSON so nothing is lost.
        if content is None or isinstance(content, str):
            return content
        return json.dumps(content, ensure_ascii=False)

    rows, bad = [], 0
    with open(argv[1], encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                messages = []
                for m in r["messages"]:
                    calls = [{"id": c.get("id"), "type": c.get("type", "function"),
                              "function": {"name": c["function"]["name"],
                                           "arguments": c["function"]["arguments"]
                                           if isinstance(c["function"]["arguments"], str)
                                           else json.dumps(c["function"]["arguments"])}}
                             for c in m.get("tool_calls") or []]
                    messages.append({"role": m["role"], "content": text(m.get("content")),
                                     "reasoning_content": m.get("reasoning_content"),
                                     "tool_call_id": m.get("tool_call_id"), "name": m.get("name"),
                                     "tool_calls": calls or None})
                rows.append({"messages": messages,
                             "tools": json.dumps(r["tools"]) if r.get("tools") is not None else None,
                             "rollout_id": r.get("rollout_id"), "task_id": r.get("task_id"),
                             "sample_index": r.get("sample_index"),
                             "from_messages": r.get("from_messages", False), "reward": r.get("reward")})
            except (ValueError, KeyError, TypeError) as e:
                bad += 1
                print(f"sft-to-parquet: {argv[1]}:{number}: {e} (line skipped)", file=sys.stderr)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), argv[2])
    print(f"sft-to-parquet: {len(rows)} rows written to {argv[2]}", file=sys.stderr)
    return 65 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
