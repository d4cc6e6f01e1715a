#include <doctest/doctest.h>

#include "proxy/formats/anthropic.h"
#include "proxy/formats/wire.h"
#include "support/chat_script.h"

using forge::Kind;
using forge::proxy::AnthropicFormat;
using forge::proxy::Json;
using namespace forge::testing;

namespace {

// A Claude Code-shaped request: system blocks with cache_control, a
// mid-conversation system turn, thinking + tool_use replayed, tool_result.
Json ClaudeRequest() {
  return Json::parse(R"({
    "model": "claude-opus-5-5", "max_tokens": 32000, "stream": true,
    "system": [{"type":"text","text":"x-anthropic-billing-header: cc"},
               {"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
    "messages": [
      {"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"},
                                {"type":"text","text":"make a.txt"}]},
      {"role":"system","content":"cwd: /w"},
      {"role":"assistant","content":[
        {"type":"thinking","thinking":"plan","signature":"sig"},
        {"type":"text","text":"Writing."},
        {"type":"tool_use","id":"toolu_1","name":"Write","input":{"path":"a.txt","text":"hi"}}]},
      {"role":"user","content":[
        {"type":"tool_result","tool_use_id":"toolu_1","content":"ok","is_error":true},
        {"type":"text","text":"go on"},
        {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}
    ],
    "tools": [{"name":"Write","description":"write a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},
              {"type":"web_search_20250305","name":"web_search"}],
    "tool_choice": {"type":"any","disable_parallel_tool_use":true},
    "stop_sequences": ["END"], "temperature": 0.5, "top_p": 0.9, "top_k": 20,
    "metadata": {"user_id": "u1"}
  })");
}

}  // namespace

TEST_CASE("anthropic: a Claude Code request translates field by field") {
  AnthropicFormat format;
  auto chat = format.ToChat(ClaudeRequest());
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  const Json& body = chat->body;
  CHECK(chat->stream);
  CHECK_FALSE(chat->side_call);
  CHECK(body["model"] == "claude-opus-5-5");
  CHECK(body["max_tokens"] == 32000);
  CHECK(body["stream"] == true);
  CHECK(body["stream_options"]["include_usage"] == true);
  const Json& m = body["messages"];
  REQUIRE(m.size() == 6);
  CHECK(m[0] == Json{{"role", "system"}, {"content", "x-anthropic-billing-header: cc\n\nYou are Claude Code."}});
  CHECK(m[1]["role"] == "user");
  CHECK(m[1]["content"].size() == 2);
  CHECK(m[1]["content"][1] == Json{{"type", "text"}, {"text", "make a.txt"}});
  CHECK(m[2] == Json{{"role", "system"}, {"content", "cwd: /w"}});
  CHECK(m[3]["role"] == "assistant");
  CHECK(m[3]["content"] == "Writing.");
  CHECK(m[3]["reasoning_content"] == "plan");
  REQUIRE(m[3]["tool_calls"].size() == 1);
  CHECK(m[3]["tool_calls"][0]["id"] == "toolu_1");
  CHECK(m[3]["tool_calls"][0]["function"]["name"] == "Write");
  CHECK(Json::parse(m[3]["tool_calls"][0]["function"]["arguments"].get<std::string>()) ==
        Json{{"path", "a.txt"}, {"text", "hi"}});
  CHECK(m[4] == Json{{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "ok"}, {"is_error", true}});
  CHECK(m[5]["role"] == "user");
  CHECK(m[5]["content"][0] == Json{{"type", "text"}, {"text", "go on"}});
  CHECK(m[5]["content"][1]["image_url"]["url"] == "data:image/png;base64,iVBO");
  REQUIRE(body["tools"].size() == 1);  // the hosted web_search tool is left out
  CHECK(body["tools"][0]["function"]["name"] == "Write");
  CHECK(body["tools"][0]["function"]["description"] == "write a file");
  CHECK(body["tools"][0]["function"]["parameters"]["properties"]["path"]["type"] == "string");
  CHECK(body["tool_choice"] == "required");
  CHECK(body["parallel_tool_calls"] == false);
  CHECK(body["stop"] == Json::array({"END"}));
  CHECK(body["temperature"] == 0.5);
  CHECK(body["top_p"] == 0.9);
  CHECK(body["top_k"] == 20);
  CHECK(body["user"] == "u1");
}

TEST_CASE("anthropic: tool_choice variants and plain string content") {
  AnthropicFormat format;
  Json req = {{"model", "m"}, {"max_tokens", 10},
              {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  req["tool_choice"] = {{"type", "tool"}, {"name", "Bash"}};
  auto chat = format.ToChat(req);
  REQUIRE(chat.ok());
  CHECK(chat->body["tool_choice"] == Json{{"type", "function"}, {"function", {{"name", "Bash"}}}});
  CHECK(chat->body["messages"][0] == Json{{"role", "user"}, {"content", "hi"}});
  CHECK_FALSE(chat->stream);
  CHECK_FALSE(chat->body.contains("stream"));
  req["tool_choice"] = {{"type", "none"}};
  CHECK(format.ToChat(req)->body["tool_choice"] == "none");
  req["tool_choice"] = {{"type", "auto"}};
  CHECK(format.ToChat(req)->body["tool_choice"] == "auto");
}

TEST_CASE("anthropic: bad client input is InvalidData naming the field") {
  AnthropicFormat format;
  auto expect = [&](Json req, const std::string& field) {
    auto chat = format.ToChat(req);
    REQUIRE_FALSE(chat.ok());
    CHECK(chat.status().kind() == Kind::kInvalidData);
    CHECK_MESSAGE(chat.status().message().find(field) != std::string::npos, chat.status().message());
  };
  Json ok = {{"model", "m"}, {"max_tokens", 10}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  expect(Json::array(), "body");
  Json r = ok; r.erase("max_tokens"); expect(r, "max_tokens");
  r = ok; r["max_tokens"] = "10"; expect(r, "max_tokens");
  r = ok; r.erase("messages"); expect(r, "messages");
  r = ok; r["messages"][0]["role"] = "tool"; expect(r, "messages[0].role");
  r = ok; r["messages"][0]["content"] = {{{"type", "video"}}}; expect(r, "messages[0].content[0].type");
  r = ok; r["messages"][0]["content"] = {{{"type", "text"}}}; expect(r, "messages[0].content[0].text");
  r = ok; r["messages"][0]["content"] = {{{"type", "image"}, {"source", {{"type", "file"}}}}};
  expect(r, "messages[0].content[0].source.type");
  r = ok; r["messages"][0] = {{"role", "assistant"}, {"content", {{{"type", "tool_use"}, {"id", "t"}, {"name", "n"}, {"input", "x"}}}}};
  expect(r, "messages[0].content[0].input");
  r = ok; r["system"] = 5; expect(r, "system");
  r = ok; r["tools"] = {{{"name", "x"}}}; expect(r, "tools[0].input_schema");
  r = ok; r["tool_choice"] = {{"type", "sometimes"}}; expect(r, "tool_choice.type");
  r = ok; r["stop_sequences"] = {1}; expect(r, "stop_sequences[0]");
  r = ok; r["temperature"] = "hot"; expect(r, "temperature");
  r = ok; r["stream"] = "yes"; expect(r, "stream");
}

TEST_CASE("anthropic: a chat response becomes a Messages response") {
  AnthropicFormat format;
  auto msg = format.FromChat(ScriptedResponse());
  REQUIRE_MESSAGE(msg.ok(), msg.status().message());
  CHECK((*msg)["id"] == "msg_abc123");
  CHECK((*msg)["type"] == "message");
  CHECK((*msg)["role"] == "assistant");
  CHECK((*msg)["model"] == "policy");
  const Json& c = (*msg)["content"];
  REQUIRE(c.size() == 3);
  CHECK(c[0]["type"] == "thinking");
  CHECK(c[0]["thinking"] == "Need a file.");
  CHECK(c[0]["signature"].get<std::string>().rfind("forge:", 0) == 0);
  CHECK(c[1] == Json{{"type", "text"}, {"text", "Hello world"}});
  CHECK(c[2] == Json{{"type", "tool_use"}, {"id", "call_1"}, {"name", "write_file"},
                     {"input", {{"path", "a.txt"}, {"text", "hi"}}}});
  CHECK((*msg)["stop_reason"] == "tool_use");
  CHECK((*msg)["stop_sequence"].is_null());
  CHECK((*msg)["usage"]["input_tokens"] == 12);
  CHECK((*msg)["usage"]["output_tokens"] == 9);
}

TEST_CASE("anthropic: stop reasons") {
  CHECK(AnthropicFormat::StopReason("stop", false) == "end_turn");
  CHECK(AnthropicFormat::StopReason("length", true) == "max_tokens");
  CHECK(AnthropicFormat::StopReason("tool_calls", false) == "tool_use");
  CHECK(AnthropicFormat::StopReason("stop", true) == "tool_use");
  CHECK(AnthropicFormat::StopReason("content_filter", false) == "refusal");
  AnthropicFormat format;
  Json chat = ScriptedResponse();
  chat["choices"][0]["message"].erase("tool_calls");
  chat["choices"][0]["finish_reason"] = "stop";
  chat["choices"][0]["stop_reason"] = "END";  // vLLM names the stop string matched
  auto msg = format.FromChat(chat);
  REQUIRE(msg.ok());
  CHECK((*msg)["stop_reason"] == "stop_sequence");
  CHECK((*msg)["stop_sequence"] == "END");
}

TEST_CASE("anthropic: a broken upstream response is a Protocol error") {
  AnthropicFormat format;
  auto msg = format.FromChat(Json{{"choices", Json::array()}});
  REQUIRE_FALSE(msg.ok());
  CHECK(msg.status().kind() == Kind::kProtocol);
  CHECK(msg.status().message().find("choices") != std::string::npos);
}

namespace {

// Rebuilds the message from the events the way the Anthropic SDK's
// MessageStream accumulates them.
Json Replay(const std::vector<Event>& events) {
  Json message;
  std::map<int, std::string> partial;
  for (const Event& e : events) {
    CHECK(e.name == e.data["type"]);  // event: line matches the data type
    std::string type = e.data["type"];
    if (type == "message_start") {
      message = e.data["message"];
    } else if (type == "content_block_start") {
      CHECK(e.data["index"] == message["content"].size());
      message["content"].push_back(e.data["content_block"]);
    } else if (type == "content_block_delta") {
      Json& block = message["content"][e.data["index"].get<int>()];
      const Json& d = e.data["delta"];
      if (d["type"] == "text_delta") block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "thinking_delta") block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      if (d["type"] == "signature_delta") block["signature"] = d["signature"];
      if (d["type"] == "input_json_delta") partial[e.data["index"]] += d["partial_json"].get<std::string>();
    } else if (type == "content_block_stop") {
      int i = e.data["index"];
      if (partial.count(i)) message["content"][i]["input"] = Json::parse(partial[i]);
    } else if (type == "message_delta") {
      message["stop_reason"] = e.data["delta"]["stop_reason"];
      message["stop_sequence"] = e.data["delta"]["stop_sequence"];
      message["usage"] = e.data["usage"];
    }
  }
  return message;
}

}  // namespace

TEST_CASE("anthropic: the stream is written event by event as chunks arrive") {
  AnthropicFormat format;
  auto stream = format.NewStream();
  std::vector<Json> chunks = ScriptedChunks();
  std::vector<std::vector<std::string>> per_chunk;
  std::vector<Event> all;
  for (const Json& chunk : chunks) {
    auto events = ParseEvents(stream->OnChunk(chunk));
    per_chunk.push_back(Types(events));
    all.insert(all.end(), events.begin(), events.end());
  }
  auto tail = ParseEvents(stream->OnEnd());
  all.insert(all.end(), tail.begin(), tail.end());
  using V = std::vector<std::string>;
  CHECK(per_chunk[0] == V{"message_start", "ping"});
  CHECK(per_chunk[1] == V{"content_block_start", "content_block_delta"});
  // The thinking block gets its signature_delta just before it stops.
  CHECK(per_chunk[2] == V{"content_block_delta", "content_block_stop", "content_block_start", "content_block_delta"});
  CHECK(per_chunk[3] == V{"content_block_delta"});
  CHECK(per_chunk[4] == V{"content_block_stop", "content_block_start"});
  CHECK(per_chunk[5] == V{"content_block_delta"});
  CHECK(per_chunk[6] == V{"content_block_delta"});
  CHECK(per_chunk[7] == V{"content_block_delta"});
  CHECK(per_chunk[8] == V{"content_block_stop"});
  CHECK(per_chunk[9].empty());
  CHECK(Types(tail) == V{"message_delta", "message_stop"});

  // The fragments go out as they came, not re-cut or buffered.
  CHECK(all[11].data["delta"] == Json{{"type", "input_json_delta"}, {"partial_json", "{\"path\": "}});
  CHECK(all[4].data["delta"]["type"] == "signature_delta");
  CHECK(all[4].data["delta"]["signature"] == format.FromChat(ScriptedResponse()).value()["content"][0]["signature"]);
  CHECK(all[10].data["content_block"] ==
        Json{{"type", "tool_use"}, {"id", "call_1"}, {"name", "write_file"}, {"input", Json::object()}});
  CHECK(all[0].data["message"]["id"] == "msg_abc123");
  CHECK(tail[0].data["delta"]["stop_reason"] == "tool_use");
  CHECK(tail[0].data["usage"]["output_tokens"] == 9);

  auto unstreamed = format.FromChat(ScriptedResponse());
  REQUIRE(unstreamed.ok());
  CHECK(stream->Assembled() == *unstreamed);
  CHECK(Replay(all) == *unstreamed);
  CHECK(stream->OnEnd().empty());  // ended once
}

TEST_CASE("anthropic: an upstream failure mid-stream ends with an error event") {
  AnthropicFormat format;
  auto stream = format.NewStream();
  auto chunks = ScriptedChunks();
  stream->OnChunk(chunks[0]);
  stream->OnChunk(chunks[2]);
  auto events = ParseEvents(stream->OnError("upstream closed the connection"));
  REQUIRE(events.size() == 1);
  CHECK(events[0].name == "error");
  CHECK(events[0].data == Json{{"type", "error"},
                               {"error", {{"type", "api_error"}, {"message", "upstream closed the connection"}}}});
  CHECK(stream->OnChunk(chunks[3]).empty());
  CHECK(stream->OnEnd().empty());
  // What did arrive is still assembled for the record.
  CHECK(stream->Assembled()["content"][0]["text"] == "Hello");
}

TEST_CASE("anthropic: an empty upstream stream is still a well-formed message") {
  AnthropicFormat format;
  auto stream = format.NewStream();
  auto events = ParseEvents(stream->OnEnd());
  CHECK(Types(events) == std::vector<std::string>{"message_start", "ping", "message_delta", "message_stop"});
  CHECK(events[2].data["delta"]["stop_reason"] == "end_turn");
}

TEST_CASE("anthropic: error bodies and count_tokens") {
  AnthropicFormat format;
  CHECK(format.ErrorBody(429, "slow down") ==
        Json{{"type", "error"}, {"error", {{"type", "rate_limit_error"}, {"message", "slow down"}}}});
  CHECK(format.ErrorBody(400, "x")["error"]["type"] == "invalid_request_error");
  CHECK(format.ErrorBody(401, "x")["error"]["type"] == "authentication_error");
  CHECK(format.ErrorBody(529, "x")["error"]["type"] == "overloaded_error");
  CHECK(format.ErrorBody(500, "x")["error"]["type"] == "api_error");

  Json req = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "count me"}}}},
              {"tools", {{{"name", "Bash"}, {"input_schema", {{"type", "object"}}}}}}};
  auto chat = format.CountTokensToChat(req);  // no max_tokens needed
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  CHECK(chat->side_call);
  CHECK_FALSE(chat->stream);
  CHECK(chat->body["max_tokens"] == 1);
  auto counted = AnthropicFormat::CountTokensFromChat(ScriptedResponse());
  REQUIRE(counted.ok());
  CHECK(*counted == Json{{"input_tokens", 12}});
  auto estimate = format.CountTokensEstimate(req);
  REQUIRE(estimate.ok());
  CHECK((*estimate)["input_tokens"].get<int>() > 5);
  CHECK_FALSE(format.CountTokensEstimate(Json{{"model", "m"}}).ok());
}

TEST_CASE("anthropic: title, topic and quota helper calls are side calls") {
  AnthropicFormat format;
  Json topic = {{"model", "claude-haiku"}, {"max_tokens", 512},
                {"system", "Analyze if this message indicates a new conversation topic. Format as JSON."},
                {"messages", {{{"role", "user"}, {"content", "fix the bug"}}}}};
  CHECK(format.ToChat(topic)->side_call);
  Json quota = {{"model", "claude-haiku"}, {"max_tokens", 1},
                {"messages", {{{"role", "user"}, {"content", "quota"}}}}};
  CHECK(format.ToChat(quota)->side_call);
  // The same words in an agent call with tools are the agent's business.
  topic["tools"] = {{{"name", "Bash"}, {"input_schema", {{"type", "object"}}}}};
  CHECK_FALSE(format.ToChat(topic)->side_call);
}

TEST_CASE("anthropic: a token's delta frame is the bytes of the document it stands for") {
  // Written directly on the per-token path; it must equal SseFrame of the
  // same document, escapes included.
  const std::string tricky = "say \"hi\"\\n\n\t\x01 é 😀";
  AnthropicFormat format;
  auto stream = format.NewStream();
  stream->OnChunk(Chunk({{"role", "assistant"}, {"content", ""}}));
  std::string text = stream->OnChunk(Chunk({{"content", tricky}}));
  std::string want = forge::proxy::wire::SseFrame(
      "content_block_delta",
      {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", tricky}}}});
  CHECK(text.size() >= want.size());
  CHECK(text.substr(text.size() - want.size()) == want);  // after the block's start
  std::string args = stream->OnChunk(Chunk(ToolDelta(0, {{"id", "call_1"}, {"type", "function"},
                                                          {"function", {{"name", "w"}, {"arguments", tricky}}}})));
  std::string want_args = forge::proxy::wire::SseFrame(
      "content_block_delta", {{"type", "content_block_delta"},
                              {"index", 1},
                              {"delta", {{"type", "input_json_delta"}, {"partial_json", tricky}}}});
  CHECK(args.substr(args.size() - want_args.size()) == want_args);
}
