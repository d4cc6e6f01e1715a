#include <doctest/doctest.h>

#include "proxy/formats/gemini.h"
#include "support/chat_script.h"

using forge::Kind;
using forge::proxy::GeminiFormat;
using forge::proxy::GeminiRoute;
using forge::proxy::Json;
using namespace forge::testing;

namespace {

GeminiRoute StreamRoute() {
  auto route = GeminiFormat::ParseRoute("/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse");
  REQUIRE(route.ok());
  return *route;
}

// A Gemini CLI-shaped request: systemInstruction, a model turn with a dropped
// thought and a call without id, the answer by name, capitalised schema types.
Json CliRequest() {
  return Json::parse(R"({
    "systemInstruction": {"role":"user","parts":[{"text":"You are Gemini CLI."},{"text":"Be safe."}]},
    "contents": [
      {"role":"user","parts":[{"text":"make a.txt"}]},
      {"role":"model","parts":[{"text":"hidden","thought":true},{"text":"Writing."},
                               {"functionCall":{"name":"write_file","args":{"path":"a.txt"}}},
                               {"functionCall":{"name":"read_file","args":{"path":"b.txt"}},"thoughtSignature":"skip_thought_signature_validator"}]},
      {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"B"}}},
                              {"functionResponse":{"name":"write_file","response":{"output":"ok"}}}]},
      {"role":"user","parts":[{"text":"see"},{"inlineData":{"mimeType":"image/png","data":"iVBO"}}]}
    ],
    "tools": [{"functionDeclarations":[
      {"name":"write_file","description":"write","parameters":{"type":"OBJECT","properties":{"path":{"type":"STRING","enum":["A"]}}}},
      {"name":"read_file","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}}}}]},
      {"googleSearch":{}}],
    "toolConfig": {"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["write_file"]}},
    "generationConfig": {"temperature":1,"topP":0.95,"topK":64,"maxOutputTokens":500,"stopSequences":["END"],
                         "thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}
  })");
}

}  // namespace

TEST_CASE("gemini: routes parse from the URL") {
  auto route = GeminiFormat::ParseRoute("/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse");
  REQUIRE(route.ok());
  CHECK(route->model == "gemini-3-pro");
  CHECK(route->method == "streamGenerateContent");
  CHECK(route->stream);
  CHECK(route->sse);
  auto plain = GeminiFormat::ParseRoute("/v1beta/models/flash-lite:generateContent");
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->stream);
  CHECK(GeminiFormat::ParseRoute("/v1beta/models/m:countTokens")->method == "countTokens");
  CHECK(GeminiFormat::ParseRoute("/v1beta/models/m:embedContent").status().kind() == Kind::kInvalidData);
  CHECK_FALSE(GeminiFormat::ParseRoute("/v1beta/files").ok());
}

TEST_CASE("gemini: a Gemini CLI request translates field by field, with made-up call ids") {
  GeminiFormat format;
  auto chat = format.ToChat(StreamRoute(), CliRequest());
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  const Json& body = chat->body;
  CHECK(chat->stream);
  CHECK_FALSE(chat->side_call);
  CHECK(body["model"] == "gemini-3-pro");
  CHECK(body["stream"] == true);
  CHECK(body["temperature"] == 1);
  CHECK(body["top_p"] == 0.95);
  CHECK(body["top_k"] == 64);
  CHECK(body["max_tokens"] == 500);
  CHECK(body["stop"] == Json::array({"END"}));
  CHECK(body["tool_choice"] == Json{{"type", "function"}, {"function", {{"name", "write_file"}}}});
  const Json& m = body["messages"];
  REQUIRE(m.size() == 6);
  CHECK(m[0] == Json{{"role", "system"}, {"content", "You are Gemini CLI.\nBe safe."}});
  CHECK(m[1] == Json{{"role", "user"}, {"content", "make a.txt"}});
  CHECK(m[2]["content"] == "Writing.");
  CHECK(m[2]["reasoning_content"] == "hidden");
  REQUIRE(m[2]["tool_calls"].size() == 2);
  CHECK(m[2]["tool_calls"][0] == Json{{"id", "call_gemini_0"}, {"type", "function"},
                                      {"function", {{"name", "write_file"}, {"arguments", "{\"path\":\"a.txt\"}"}}}});
  CHECK(m[2]["tool_calls"][1]["id"] == "call_gemini_1");
  // Answers match their calls by name, whatever their order.
  CHECK(m[3] == Json{{"role", "tool"}, {"tool_call_id", "call_gemini_1"}, {"content", "{\"output\":\"B\"}"}});
  CHECK(m[4] == Json{{"role", "tool"}, {"tool_call_id", "call_gemini_0"}, {"content", "{\"output\":\"ok\"}"}});
  CHECK(m[5]["content"][1]["image_url"]["url"] == "data:image/png;base64,iVBO");
  REQUIRE(body["tools"].size() == 2);  // googleSearch is Google's, not the policy's
  CHECK(body["tools"][0]["function"]["parameters"] ==
        Json{{"type", "object"}, {"properties", {{"path", {{"type", "string"}, {"enum", {"A"}}}}}}});
  CHECK(body["tools"][1]["function"]["parameters"]["properties"]["path"]["type"] == "string");
}

TEST_CASE("gemini: ids the client sent are kept, snake_case keys are accepted") {
  GeminiFormat format;
  Json req = Json::parse(R"({
    "system_instruction": {"parts":[{"text":"sys"}]},
    "contents": [
      {"role":"model","parts":[{"function_call":{"id":"run_1","name":"sh","args":{}}}]},
      {"role":"user","parts":[{"function_response":{"id":"run_1","name":"sh","response":{"output":"x"}}}]}],
    "generation_config": {"max_output_tokens": 7}
  })");
  auto chat = format.ToChat(StreamRoute(), req);
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  CHECK(chat->body["messages"][0]["content"] == "sys");
  CHECK(chat->body["messages"][1]["tool_calls"][0]["id"] == "run_1");
  CHECK(chat->body["messages"][2]["tool_call_id"] == "run_1");
  CHECK(chat->body["max_tokens"] == 7);
}

TEST_CASE("gemini: the virtual ToChat takes the model and stream flag added by the proxy") {
  GeminiFormat format;
  Json req = {{"model", "models/g"}, {"stream", true}, {"contents", {{{"parts", {{{"text", "hi"}}}}}}}};
  auto chat = format.ToChat(req);
  REQUIRE(chat.ok());
  CHECK(chat->body["model"] == "g");
  CHECK(chat->stream);
}

TEST_CASE("gemini: bad client input is InvalidData naming the field") {
  GeminiFormat format;
  auto expect = [&](Json req, const std::string& field) {
    auto chat = format.ToChat(StreamRoute(), req);
    REQUIRE_FALSE(chat.ok());
    CHECK(chat.status().kind() == Kind::kInvalidData);
    CHECK_MESSAGE(chat.status().message().find(field) != std::string::npos, chat.status().message());
  };
  Json ok = {{"contents", {{{"role", "user"}, {"parts", {{{"text", "hi"}}}}}}}};
  Json r = ok; r.erase("contents"); expect(r, "contents");
  r = ok; r["contents"][0]["role"] = "robot"; expect(r, "contents[0].role");
  r = ok; r["contents"][0]["parts"] = 1; expect(r, "contents[0].parts");
  r = ok; r["contents"][0]["parts"][0] = {{"text", 5}}; expect(r, "contents[0].parts[0].text");
  r = ok; r["contents"][0]["parts"][0] = {{"inlineData", {{"mimeType", "audio/wav"}, {"data", "x"}}}};
  expect(r, "contents[0].parts[0].inlineData.mimeType");
  r = ok; r["contents"][0]["parts"][0] = {{"executableCode", {}}}; expect(r, "contents[0].parts[0]");
  r = ok; r["contents"][0] = {{"role", "model"}, {"parts", {{{"functionCall", {{"args", {}}}}}}}};
  expect(r, "contents[0].parts[0].functionCall.name");
  r = ok; r["generationConfig"] = {{"candidateCount", 2}}; expect(r, "generationConfig.candidateCount");
  r = ok; r["generationConfig"] = {{"temperature", "warm"}}; expect(r, "generationConfig.temperature");
  r = ok; r["toolConfig"] = {{"functionCallingConfig", {{"mode", "SOMETIMES"}}}};
  expect(r, "toolConfig.functionCallingConfig.mode");
  r = ok; r["tools"] = {{{"functionDeclarations", {{{"description", "x"}}}}}}; expect(r, "tools[0].functionDeclarations[0].name");
  auto no_model = format.ToChat(ok);
  REQUIRE_FALSE(no_model.ok());
  CHECK(no_model.status().message().find("model") != std::string::npos);
}

TEST_CASE("gemini: a chat response becomes a GenerateContentResponse") {
  GeminiFormat format;
  auto resp = format.FromChat(ScriptedResponse());
  REQUIRE_MESSAGE(resp.ok(), resp.status().message());
  const Json& cand = (*resp)["candidates"][0];
  CHECK(cand["content"]["role"] == "model");
  // The reasoning also rides, signed, on the first answer part and first call.
  const std::string sig = "Zm9yZ2UtcmVhc29uaW5nOk5lZWQgYSBmaWxlLg==";  // "forge-reasoning:Need a file."
  CHECK(cand["content"]["parts"] ==
        Json::parse(R"([{"text":"Need a file.","thought":true},{"text":"Hello world","thoughtSignature":")" + sig + R"("},
                        {"functionCall":{"id":"call_1","name":"write_file","args":{"path":"a.txt","text":"hi"}},
                         "thoughtSignature":")" + sig + R"("}])"));
  CHECK(cand["finishReason"] == "STOP");
  CHECK((*resp)["usageMetadata"] ==
        Json{{"promptTokenCount", 12}, {"candidatesTokenCount", 9}, {"totalTokenCount", 21}});
  CHECK((*resp)["modelVersion"] == "policy");
  CHECK(GeminiFormat::FinishReason("length") == "MAX_TOKENS");
  CHECK(GeminiFormat::FinishReason("content_filter") == "SAFETY");
}

namespace {

// Merges streamed GenerateContentResponse deltas the way a client does.
Json Merge(const std::vector<Event>& events) {
  Json merged;
  Json parts = Json::array();
  for (const Event& e : events) {
    CHECK(e.name.empty());  // Gemini's SSE has data lines only
    const Json& cand = e.data["candidates"][0];
    for (const Json& p : cand["content"]["parts"]) {
      if (p.contains("text") && p["text"] == "") continue;
      bool thought = p.value("thought", false);
      if (p.contains("text") && !parts.empty() && parts.back().contains("text") &&
          parts.back().value("thought", false) == thought) {
        parts.back()["text"] = parts.back()["text"].get<std::string>() + p["text"].get<std::string>();
      } else {
        parts.push_back(p);
      }
    }
    merged = e.data;
  }
  merged["candidates"][0]["content"]["parts"] = parts;
  return merged;
}

}  // namespace

TEST_CASE("gemini: the stream sends text at once and each call whole as soon as it is complete") {
  GeminiFormat format;
  auto stream = format.NewStream();
  std::vector<size_t> per_chunk;
  std::vector<Event> all;
  for (const Json& chunk : ScriptedChunks()) {
    auto events = ParseEvents(stream->OnChunk(chunk));
    per_chunk.push_back(events.size());
    all.insert(all.end(), events.begin(), events.end());
  }
  auto tail = ParseEvents(stream->OnEnd());
  all.insert(all.end(), tail.begin(), tail.end());
  CHECK(per_chunk == std::vector<size_t>{0, 1, 1, 1, 0, 0, 0, 0, 1, 0});
  CHECK(all[0].data["candidates"][0]["content"]["parts"][0] == Json{{"text", "Need a file."}, {"thought", true}});
  CHECK(all[1].data["candidates"][0]["content"]["parts"][0]["text"] == "Hello");
  CHECK(all[1].data["candidates"][0]["content"]["parts"][0].contains("thoughtSignature"));
  CHECK_FALSE(all[2].data["candidates"][0]["content"]["parts"][0].contains("thoughtSignature"));
  CHECK(all[3].data["candidates"][0]["content"]["parts"][0]["thoughtSignature"] ==
        all[1].data["candidates"][0]["content"]["parts"][0]["thoughtSignature"]);
  CHECK(all[3].data["candidates"][0]["content"]["parts"][0]["functionCall"] ==
        Json{{"id", "call_1"}, {"name", "write_file"}, {"args", {{"path", "a.txt"}, {"text", "hi"}}}});
  REQUIRE(tail.size() == 1);
  CHECK(tail[0].data["candidates"][0]["finishReason"] == "STOP");
  CHECK(tail[0].data["usageMetadata"]["totalTokenCount"] == 21);

  auto unstreamed = format.FromChat(ScriptedResponse());
  REQUIRE(unstreamed.ok());
  CHECK(stream->Assembled() == *unstreamed);
  CHECK(Merge(all) == *unstreamed);
}

TEST_CASE("gemini: with two calls, the first goes out when the second starts") {
  GeminiFormat format;
  auto stream = format.NewStream();
  auto call = [](int i, const char* id, const char* name, const char* args) {
    return Chunk(ToolDelta(i, {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}}));
  };
  CHECK(stream->OnChunk(call(0, "c0", "ls", "{}")).empty());
  auto first = ParseEvents(stream->OnChunk(call(1, "c1", "cat", "{\"f\":")));
  REQUIRE(first.size() == 1);
  CHECK(first[0].data["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "ls");
  CHECK(stream->OnChunk(Chunk(ToolDelta(1, {{"function", {{"arguments", "1}"}}}}))).empty());
  auto second = ParseEvents(stream->OnChunk(Chunk(Json::object(), "tool_calls")));
  REQUIRE(second.size() == 1);
  CHECK(second[0].data["candidates"][0]["content"]["parts"][0]["functionCall"]["args"] == Json{{"f", 1}});
}

TEST_CASE("gemini: errors, count tokens and the router side call") {
  GeminiFormat format;
  CHECK(format.ErrorBody(429, "slow") ==
        Json{{"error", {{"code", 429}, {"message", "slow"}, {"status", "RESOURCE_EXHAUSTED"}}}});
  auto stream = format.NewStream();
  stream->OnChunk(ScriptedChunks()[2]);
  auto events = ParseEvents(stream->OnError("upstream died"));
  REQUIRE(events.size() == 1);
  CHECK(events[0].data["error"]["status"] == "INTERNAL");
  CHECK(stream->OnEnd().empty());

  auto route = GeminiFormat::ParseRoute("/v1beta/models/g:countTokens");
  Json count = {{"generateContentRequest", {{"contents", {{{"parts", {{{"text", "count me"}}}}}}}}}};
  auto chat = format.CountTokensToChat(*route, count);
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  CHECK(chat->side_call);
  CHECK(chat->body["max_tokens"] == 1);
  CHECK(*GeminiFormat::CountTokensFromChat(ScriptedResponse()) == Json{{"totalTokens", 12}});
  CHECK((*format.CountTokensEstimate(*route, count))["totalTokens"].get<int>() >= 1);

  // Gemini CLI's model router: a JSON classifier with no tools.
  Json router = Json::parse(R"({"contents":[{"role":"user","parts":[{"text":"route this"}]}],
    "generationConfig":{"responseMimeType":"application/json",
      "responseJsonSchema":{"type":"object","properties":{"complexity_score":{"type":"integer"}}}}})");
  auto routed = format.ToChat(*GeminiFormat::ParseRoute("/v1beta/models/flash-lite:generateContent"), router);
  REQUIRE(routed.ok());
  CHECK(routed->side_call);
  CHECK(routed->body["response_format"]["type"] == "json_schema");
}

// Gemini CLI drops thought parts from the history it resends but keeps each
// part's thoughtSignature; the proxy's signature brings the reasoning back.
TEST_CASE("gemini: reasoning survives Gemini CLI's replay through the thought signature") {
  GeminiFormat format;
  auto resp = format.FromChat(ScriptedResponse());
  REQUIRE(resp.ok());
  Json model_turn = (*resp)["candidates"][0]["content"];
  // What the CLI resends: the thought part gone, the signed parts kept.
  Json kept = Json::array();
  for (const Json& p : model_turn["parts"]) {
    if (!p.value("thought", false)) kept.push_back(p);
  }
  model_turn["parts"] = kept;
  Json request = {{"contents", Json::array({Json::parse(R"({"role":"user","parts":[{"text":"make a.txt"}]})"),
                                            model_turn,
                                            Json::parse(R"({"role":"user","parts":[{"functionResponse":
                                              {"id":"call_1","name":"write_file","response":{"output":"ok"}}}]})")})}};
  auto chat = format.ToChat(StreamRoute(), request);
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  const Json& assistant = chat->body["messages"][1];
  CHECK(assistant["reasoning_content"] == "Need a file.");
  CHECK(assistant["content"] == "Hello world");
  CHECK(assistant["tool_calls"][0]["id"] == "call_1");
  CHECK(chat->body["messages"][2]["tool_call_id"] == "call_1");
}

TEST_CASE("gemini: other signatures carry no reasoning, and kept thought parts win over a signature") {
  GeminiFormat format;
  auto turn = [&](Json parts) {
    Json request = {{"contents", Json::array({Json::parse(R"({"role":"user","parts":[{"text":"go"}]})"),
                                              Json{{"role", "model"}, {"parts", std::move(parts)}}})}};
    auto chat = format.ToChat(StreamRoute(), request);
    REQUIRE_MESSAGE(chat.ok(), chat.status().message());
    return chat->body["messages"][1];
  };
  // The CLI's own placeholder, Gemini's opaque bytes, and broken base64.
  for (const char* foreign : {"skip_thought_signature_validator", "CiQBVKhc7mJb", "not base64!", ""}) {
    CAPTURE(foreign);
    Json m = turn(Json::array({{{"functionCall", {{"name", "ls"}, {"args", Json::object()}}},
                                {"thoughtSignature", foreign}}}));
    CHECK_FALSE(m.contains("reasoning_content"));
  }
  // The signature of "forge-reasoning:signed" beside a kept thought part "kept".
  Json m = turn(Json::array({{{"text", "kept"}, {"thought", true}},
                             {{"text", "ok"}, {"thoughtSignature", "Zm9yZ2UtcmVhc29uaW5nOnNpZ25lZA=="}}}));
  CHECK(m["reasoning_content"] == "kept");
  m = turn(Json::array({{{"text", "ok"}, {"thoughtSignature", "Zm9yZ2UtcmVhc29uaW5nOnNpZ25lZA=="}}}));
  CHECK(m["reasoning_content"] == "signed");
  CHECK(m["content"] == "ok");
}

TEST_CASE("gemini: without alt=sse the stream is one JSON array, written element by element") {
  auto route = GeminiFormat::ParseRoute("/v1beta/models/gemini-3-pro:streamGenerateContent");
  REQUIRE(route.ok());
  CHECK(route->stream);
  CHECK_FALSE(route->sse);
  GeminiFormat format;
  REQUIRE(format.ToChat(*route, CliRequest()).ok());
  CHECK(format.StreamContentType() == "application/json");
  auto stream = format.NewStream();
  std::string text;
  std::vector<size_t> grew;
  for (const Json& chunk : ScriptedChunks()) {
    std::string bytes = stream->OnChunk(chunk);
    grew.push_back(bytes.size());
    text += bytes;
  }
  text += stream->OnEnd();
  CHECK(text.front() == '[');
  CHECK(text.back() == ']');
  CHECK(grew[1] > 0);  // the first text went out with its chunk, not at the end
  Json array = Json::parse(text);
  REQUIRE(array.is_array());
  // The same responses as the SSE form, one element per event.
  GeminiFormat sse_format;
  auto sse = sse_format.NewStream();
  std::vector<Event> events;
  for (const Json& chunk : ScriptedChunks()) {
    auto e = ParseEvents(sse->OnChunk(chunk));
    events.insert(events.end(), e.begin(), e.end());
  }
  auto tail = ParseEvents(sse->OnEnd());
  events.insert(events.end(), tail.begin(), tail.end());
  REQUIRE(array.size() == events.size());
  for (size_t i = 0; i < events.size(); ++i) CHECK(array[i] == events[i].data);
  CHECK(stream->Assembled() == sse->Assembled());
}

TEST_CASE("gemini: a JSON-array stream stays a well-formed array on an upstream failure or when empty") {
  GeminiFormat format;
  Json request = CliRequest();
  request["model"] = "gemini-3-pro";
  request["stream"] = true;
  request["alt"] = "json";
  REQUIRE(format.ToChat(request).ok());
  auto stream = format.NewStream();
  std::string text = stream->OnChunk(ScriptedChunks()[1]);
  text += stream->OnError("upstream went away");
  CHECK(stream->OnEnd().empty());
  Json array = Json::parse(text);
  REQUIRE(array.is_array());
  CHECK(array.back()["error"]["message"] == "upstream went away");
  auto empty = format.NewStream();
  Json only = Json::parse(empty->OnEnd());
  REQUIRE(only.size() == 1);
  CHECK(only[0]["candidates"][0].contains("finishReason"));
  request["alt"] = "sse";
  GeminiFormat sse_format;
  REQUIRE(sse_format.ToChat(request).ok());
  CHECK(sse_format.StreamContentType() == "text/event-stream");
}
