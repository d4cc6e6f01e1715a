#!/usr/bin/env node
// Converts forge-pack `--format sft-messages` JSONL to parquet for veRL's
// multi-turn SFT (MultiTurnSFTDataset reads parquet only, through
// pandas.read_parquet, with the conversation in `messages`).
//
// Arrow needs one schema for every row, so fields whose shape varies from
// row to row are JSON strings: tool-call `arguments` (already strings in
// forge-pack's output) and `tools` (one JSON string per row; point veRL's
// data.multiturn.tools_key at it or json.loads it in a custom dataset).
// Content given as parts (a list) is kept as its JSON text. Message fields
// absent in some rows become nulls. The schema is the same as
// scripts/sft-to-parquet.py's (pyarrow), which does the same where pyarrow
// is installed.
//
// The parquet is written by parquet-wasm (the Rust arrow-rs parquet writer,
// compiled to WebAssembly) from an Arrow table built with apache-arrow; both
// come from npm (Debian 12 packages no Arrow/parquet library) and are
// installed at pinned versions by scripts/install-parquet-tools.sh.
//
//   node scripts/sft-to-parquet.mjs sft.jsonl sft.parquet
//
// Exit codes: 0 ok; 64 usage; 65 some lines were malformed (reported as
// file:line and skipped; the others are written); 66 input missing;
// 69 the npm modules are not installed; 73 cannot write the output.
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import readline from "node:readline";
import { createRequire } from "node:module";

const me = "sft-to-parquet";
const die = (code, message) => {
  process.stderr.write(`${me}: ${message}\n`);
  process.exit(code);
};

function modulesDir() {
  if (process.env.FORGE_PARQUET_DIR) return process.env.FORGE_PARQUET_DIR;
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  return path.join(cache, "forge", "parquet");
}

const args = process.argv.slice(2);
if (args.length !== 2 || args[0].startsWith("-")) {
  die(64, "usage: sft-to-parquet.mjs SFT.jsonl OUT.parquet");
}
const [input, output] = args;
if (!fs.existsSync(input)) die(66, `${input}: no such file`);

const dir = modulesDir();
const require = createRequire(path.join(dir, "package.json"));
let arrow, wasm;
try {
  arrow = require("apache-arrow");
  wasm = require("parquet-wasm/node");
} catch (e) {
  die(69, `apache-arrow / parquet-wasm not found under ${dir} (run scripts/install-parquet-tools.sh): ${e.message}`);
}
const { Field, List, Struct, Utf8, Int32, Float64, Bool, Table, vectorFromArray, tableToIPC } = arrow;

const str = () => new Utf8();
const field = (name, type) => new Field(name, type, true);
const functionType = new Struct([field("name", str()), field("arguments", str())]);
const toolCallType = new Struct([field("id", str()), field("type", str()), field("function", functionType)]);
const messageType = new Struct([
  field("role", str()),
  field("content", str()),
  field("reasoning_content", str()),
  field("tool_call_id", str()),
  field("name", str()),
  field("tool_calls", new List(field("item", toolCallType))),
]);

const text = (v) => (v === undefined || v === null ? null : typeof v === "string" ? v : JSON.stringify(v));
const orNull = (v) => (v === undefined ? null : v);

function toRow(r) {
  if (!r || typeof r !== "object" || !Array.isArray(r.messages)) throw new Error("no messages array");
  const messages = r.messages.map((m, i) => {
    if (!m || typeof m.role !== "string") throw new Error(`messages[${i}] has no role`);
    const calls = (m.tool_calls || []).map((c) => {
      if (!c || !c.function || typeof c.function.name !== "string") {
        throw new Error(`messages[${i}].tool_calls: a call without function.name`);
      }
      return {
        id: text(c.id),
        type: c.type || "function",
        function: { name: c.function.name, arguments: text(c.function.arguments ?? "{}") },
      };
    });
    return {
      role: m.role,
      content: text(m.content),
      reasoning_content: text(m.reasoning_content),
      tool_call_id: text(m.tool_call_id),
      name: text(m.name),
      tool_calls: calls.length ? calls : null,
    };
  });
  return {
    messages,
    tools: r.tools === undefined || r.tools === null ? null : JSON.stringify(r.tools),
    rollout_id: text(r.rollout_id),
    task_id: text(r.task_id),
    sample_index: Number.isInteger(r.sample_index) ? r.sample_index : null,
    from_messages: r.from_messages === true,
    reward: typeof r.reward === "number" ? r.reward : null,
  };
}

const rows = [];
let bad = 0;
let number = 0;
const lines = readline.createInterface({ input: fs.createReadStream(input), crlfDelay: Infinity });
for await (const line of lines) {
  ++number;
  if (!line.trim()) continue;
  try {
    rows.push(toRow(JSON.parse(line)));
  } catch (e) {
    ++bad;
    process.stderr.write(`${me}: ${input}:${number}: ${e.message} (line skipped)\n`);
  }
}

const column = (name, type) => vectorFromArray(rows.map((r) => r[name]), type);
const table = new Table({
  messages: column("messages", new List(field("item", messageType))),
  tools: column("tools", str()),
  rollout_id: column("rollout_id", str()),
  task_id: column("task_id", str()),
  sample_index: column("sample_index", new Int32()),
  from_messages: column("from_messages", new Bool()),
  reward: column("reward", new Float64()),
});
let bytes;
try {
  const props = new wasm.WriterPropertiesBuilder().setCompression(wasm.Compression.SNAPPY).build();
  bytes = wasm.writeParquet(wasm.Table.fromIPCStream(tableToIPC(table, "stream")), props);
} catch (e) {
  die(70, `writing parquet failed: ${e.message || e}`);
}
try {
  fs.writeFileSync(output + ".tmp", bytes);
  fs.renameSync(output + ".tmp", output);
} catch (e) {
  die(73, `${output}: ${e.message}`);
}
process.stderr.write(`${me}: ${rows.length} rows written to ${output}${bad ? `; ${bad} bad line(s) skipped` : ""}\n`);
process.exit(bad ? 65 : 0);
