// The official OpenAI Node SDK's Responses API against forge-proxy's
// /v1/responses: text and function calls, streamed and not, a multi-turn
// round trip by previous_response_id and by replayed items (store:false).
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ baseURL: process.env.PROXY_URL + "/v1", apiKey: process.env.ROLLOUT_SECRET, maxRetries: 0 });
const tools = [{ type: "function", name: "get_weather", strict: false, parameters: { type: "object", properties: { city: { type: "string" } } } }];

const r1 = await client.responses.create({ model: "m", instructions: "be nice", input: "hi" });
assert.equal(r1.object, "response");
assert.equal(r1.status, "completed");
assert.equal(r1.output_text, "hello from fake!");
assert.equal(r1.usage.output_tokens, 4);

const r2 = await client.responses.create({ model: "m", input: "script:tool", tools });
const call = r2.output.find((o) => o.type === "function_call");
assert.equal(call.name, "get_weather");
assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });

// Round trip through the proxy's kept state.
const r3 = await client.responses.create({
  model: "m", tools, previous_response_id: r2.id,
  input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }, { role: "user", content: "thanks" }],
});
assert.equal(r3.output_text, "hello from fake!");

// Round trip the Codex way: store:false, every item replayed.
const r4 = await client.responses.create({
  model: "m", tools, store: false,
  input: [{ role: "user", content: "script:tool" }, ...r2.output,
          { type: "function_call_output", call_id: call.call_id, output: "sunny" }, { role: "user", content: "ok" }],
});
assert.equal(r4.output_text, "hello from fake!");
// …and a store:false response cannot be continued.
await assert.rejects(client.responses.create({ model: "m", previous_response_id: r4.id, input: "more" }),
  (e) => e.status === 400 && /previous_response_id/.test(e.message));

// Streaming text: typed events with rising sequence numbers.
const s1 = await client.responses.create({ model: "m", input: "script:words:5", stream: true });
let text = "", last = -1;
const types = [];
for await (const e of s1) {
  assert.equal(e.sequence_number, last + 1);
  last = e.sequence_number;
  types.push(e.type);
  if (e.type === "response.output_text.delta") text += e.delta;
}
assert.equal(text, "w0 w1 w2 w3 w4 ");
assert.equal(types[0], "response.created");
assert.equal(types.at(-1), "response.completed");

// Streaming a function call through the SDK's stream helper.
const s2 = client.responses.stream({ model: "m", input: "script:tool", tools });
let deltas = 0;
s2.on("response.function_call_arguments.delta", () => { deltas++; });
const f2 = await s2.finalResponse();
const streamedCall = f2.output.find((o) => o.type === "function_call");
assert.deepEqual(JSON.parse(streamedCall.arguments), { city: "Paris" });
assert.equal(deltas, 3);

await assert.rejects(async () => {
  for await (const e of await client.responses.create({ model: "m", input: "script:disconnect", stream: true })) {
    if (e.type === "response.failed") throw new Error(e.response.error.message);
  }
});
console.log("responses sdk: all checks passed");
