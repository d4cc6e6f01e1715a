// The official Anthropic TypeScript SDK against forge-proxy's /v1/messages:
// text and tool use, streamed and not, a multi-turn tool round trip,
// count_tokens, and a cut stream. Exits non-zero on the first failed check.
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";

const client = new Anthropic({ baseURL: process.env.PROXY_URL, apiKey: process.env.ROLLOUT_SECRET, maxRetries: 0 });
const tools = [{ name: "get_weather", description: "weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }];
const user = (content) => ({ role: "user", content });

const r1 = await client.messages.create({ model: "m", max_tokens: 64, system: [{ type: "text", text: "be nice" }], messages: [user("hi")] });
assert.equal(r1.type, "message");
assert.match(r1.id, /^msg_/);
assert.equal(r1.content[0].text, "hello from fake!");
assert.equal(r1.stop_reason, "end_turn");
assert.equal(r1.usage.output_tokens, 4);

const r2 = await client.messages.create({ model: "m", max_tokens: 64, tools, messages: [user("script:tool")] });
assert.equal(r2.stop_reason, "tool_use");
const use = r2.content.find((b) => b.type === "tool_use");
assert.deepEqual(use.input, { city: "Paris" });

// The round trip: the assistant turn replayed, the tool result and a new text.
const r3 = await client.messages.create({
  model: "m", max_tokens: 64, tools,
  messages: [user("script:tool"), { role: "assistant", content: r2.content },
             user([{ type: "tool_result", tool_use_id: use.id, content: "sunny" }, { type: "text", text: "thanks" }])],
});
assert.equal(r3.content[0].text, "hello from fake!");

// Streaming text through the SDK's MessageStream.
let text = "";
const s1 = client.messages.stream({ model: "m", max_tokens: 64, messages: [user("script:words:5")] });
s1.on("text", (t) => { text += t; });
const f1 = await s1.finalMessage();
assert.equal(text, "w0 w1 w2 w3 w4 ");
assert.equal(f1.content[0].text, text);
assert.equal(f1.usage.output_tokens, 5);

// Streaming tool use: the arguments arrive as input_json_delta fragments.
const s2 = client.messages.stream({ model: "m", max_tokens: 64, tools, messages: [user("script:tool")] });
const types = [];
let fragments = 0;
s2.on("streamEvent", (e) => {
  types.push(e.type);
  if (e.type === "content_block_delta" && e.delta.type === "input_json_delta") fragments++;
});
const f2 = await s2.finalMessage();
assert.deepEqual(f2.content.find((b) => b.type === "tool_use").input, { city: "Paris" });
assert.equal(f2.stop_reason, "tool_use");
assert.equal(fragments, 3);
assert.equal(types[0], "message_start");
assert.equal(types.at(-1), "message_stop");

const counted = await client.messages.countTokens({ model: "m", messages: [user("count me")], tools });
assert.ok(counted.input_tokens > 0, JSON.stringify(counted));

// Bad input: an Anthropic-shaped 400 naming the field.
await assert.rejects(client.messages.create({ model: "m", messages: [user("x")] }),
  (e) => e.status === 400 && e.error?.type === "error" && e.error.error.type === "invalid_request_error" &&
         /max_tokens/.test(e.error.error.message));

// A stream the upstream cuts ends in an error, not a silent short message.
await assert.rejects(async () => {
  await client.messages.stream({ model: "m", max_tokens: 64, messages: [user("script:disconnect")] }).finalMessage();
});
console.log("anthropic sdk: all checks passed");
