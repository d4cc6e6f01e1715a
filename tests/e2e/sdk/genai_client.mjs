// The official Google Gen AI SDK against forge-proxy's Gemini routes:
// generateContent, streamGenerateContent?alt=sse, countTokens, function calls
// (which carry no ids; the proxy makes them) and a multi-turn round trip.
import { GoogleGenAI } from "@google/genai";
import assert from "node:assert/strict";

const ai = new GoogleGenAI({ apiKey: process.env.ROLLOUT_SECRET, httpOptions: { baseUrl: process.env.PROXY_URL } });
const config = { tools: [{ functionDeclarations: [{ name: "get_weather", parameters: { type: "OBJECT", properties: { city: { type: "STRING" } } } }] }] };

const r1 = await ai.models.generateContent({ model: "m", contents: "hi", config: { systemInstruction: "be nice" } });
assert.equal(r1.text, "hello from fake!");
assert.equal(r1.candidates[0].finishReason, "STOP");
assert.equal(r1.usageMetadata.candidatesTokenCount, 4);

const r2 = await ai.models.generateContent({ model: "m", contents: "script:tool", config });
assert.equal(r2.functionCalls.length, 1);
assert.equal(r2.functionCalls[0].name, "get_weather");
assert.deepEqual(r2.functionCalls[0].args, { city: "Paris" });

// Round trip without ids, as Gemini clients send it.
const r3 = await ai.models.generateContent({
  model: "m", config,
  contents: [{ role: "user", parts: [{ text: "script:tool" }] },
             { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } } }] },
             { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { output: "sunny" } } }, { text: "thanks" }] }],
});
assert.equal(r3.text, "hello from fake!");

let text = "", chunks = 0;
for await (const c of await ai.models.generateContentStream({ model: "m", contents: "script:words:5" })) {
  text += c.text ?? "";
  chunks++;
}
assert.equal(text, "w0 w1 w2 w3 w4 ");
assert.ok(chunks >= 5, `one chunk per token, got ${chunks}`);

const calls = [];
for await (const c of await ai.models.generateContentStream({ model: "m", contents: "script:tool", config })) {
  calls.push(...(c.functionCalls ?? []));
}
assert.equal(calls.length, 1);
assert.deepEqual(calls[0].args, { city: "Paris" });

const counted = await ai.models.countTokens({ model: "m", contents: "count me" });
assert.ok(counted.totalTokens > 0, JSON.stringify(counted));

await assert.rejects(ai.models.generateContent({ model: "m", contents: [{ role: "robot", parts: [{ text: "x" }] }] }),
  (e) => /contents\[0\]\.role/.test(e.message));
console.log("genai sdk: all checks passed");
