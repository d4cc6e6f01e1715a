// The official OpenAI Node SDK against forge-proxy: streaming and not, with
// tool calls. Exits non-zero with a message on the first failed check.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ baseURL: process.env.PROXY_URL + "/v1", apiKey: process.env.ROLLOUT_SECRET });
const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];

// Non-streaming text.
const r1 = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
assert.equal(r1.choices[0].message.content, "hello from fake!");
assert.equal(r1.choices[0].logprobs, null);
assert.equal(r1.prompt_token_ids, undefined);

// Non-streaming tool call.
const r2 = await client.chat.completions.create({ model: "m", tools, messages: [{ role: "user", content: "script:tool" }] });
assert.equal(r2.choices[0].finish_reason, "tool_calls");
assert.deepEqual(JSON.parse(r2.choices[0].message.tool_calls[0].function.arguments), { city: "Paris" });

// Streaming text.
let text = "";
const s1 = await client.chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "script:words:5" }] });
for await (const chunk of s1) {
  assert.equal(chunk.choices[0]?.token_ids, undefined);
  text += chunk.choices[0]?.delta?.content ?? "";
}
assert.equal(text, "w0 w1 w2 w3 w4 ");

// Streaming tool call through the SDK's stream helper, which assembles fragments.
const streamHelper = client.chat.completions.stream ? client.chat.completions : client.beta.chat.completions;
const runner = streamHelper.stream({ model: "m", tools, messages: [{ role: "user", content: "script:tool" }] });
const final = await runner.finalChatCompletion();
assert.deepEqual(JSON.parse(final.choices[0].message.tool_calls[0].function.arguments), { city: "Paris" });

// An unknown key is an AuthenticationError (401) from the SDK's point of view.
const bad = new OpenAI({ baseURL: process.env.PROXY_URL + "/v1", apiKey: "wrong", maxRetries: 0 });
await assert.rejects(bad.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] }),
                     (e) => e.status === 401);

// A stream cut by the upstream surfaces as an error, not a silent short answer.
const s2 = await client.chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "script:disconnect" }] });
await assert.rejects(async () => { for await (const _ of s2) {} });
console.log("openai sdk: all checks passed");
