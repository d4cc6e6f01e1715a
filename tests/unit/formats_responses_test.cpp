#include <doctest/doctest.h>

#include "proxy/formats/responses.h"
#include "proxy/formats/wire.h"
#include "support/chat_script.h"

using forge::Kind;
using forge::proxy::Json;
using forge::proxy::MemoryResponseStateStore;
using forge::proxy::ResponsesFormat;
using namespace forge::testing;

namespace {

// A Codex-shaped request: developer messages, a replayed reasoning item with
// our encrypted_content, a function_call and its output, flat and hosted tools.
Json CodexRequest() {
  return Json::parse(R"({
    "model": "gpt-5", "instructions": "Be brief.", "stream": true, "store": false,
    "tool_choice": "auto", "parallel_tool_calls": true, "reasoning": {"effort": "high", "summary": "auto"},
    "include": ["reasoning.encrypted_content"], "prompt_cache_key": "s1", "max_output_tokens": 300,
    "input": [
      {"type":"message","role":"developer","content":[{"type":"input_text","text":"base prompt"}]},
      {"type":"message","role":"user","content":[{"type":"input_text","text":"make a.txt"}]},
      {"type":"reasoning","id":"rs_1","summary":[],"content":null,"encrypted_content":"forge-reasoning:plan it"},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Writing."}]},
      {"type":"function_call","id":"fc_1","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"touch a.txt\"}"},
      {"type":"function_call","id":"fc_2","call_id":"call_2","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},
      {"type":"function_call_output","call_id":"call_1","output":"done"},
      {"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"a.txt"}]},
      {"role":"user","content":"thanks"}
    ],
    "tools": [
      {"type":"function","name":"exec_command","description":"run","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}},"strict":false},
      {"type":"web_search"},
      {"type":"namespace","name":"multi_agent_v1","tools":[]}
    ]
  })");
}

}  // namespace

TEST_CASE("responses: a Codex request translates field by field") {
  ResponsesFormat format;
  auto chat = format.ToChat(CodexRequest());
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  const Json& body = chat->body;
  CHECK(chat->stream);
  CHECK_FALSE(chat->side_call);
  CHECK(chat->state["store"] == false);
  CHECK(body["model"] == "gpt-5");
  CHECK(body["max_tokens"] == 300);
  CHECK(body["reasoning_effort"] == "high");
  CHECK(body["tool_choice"] == "auto");
  CHECK(body["parallel_tool_calls"] == true);
  CHECK(body["stream_options"]["include_usage"] == true);
  const Json& m = body["messages"];
  REQUIRE(m.size() == 7);
  CHECK(m[0] == Json{{"role", "system"}, {"content", "Be brief."}});
  CHECK(m[1] == Json{{"role", "system"}, {"content", "base prompt"}});
  CHECK(m[2] == Json{{"role", "user"}, {"content", "make a.txt"}});
  CHECK(m[3]["role"] == "assistant");
  CHECK(m[3]["content"] == "Writing.");
  CHECK(m[3]["reasoning_content"] == "plan it");  // recovered from encrypted_content
  REQUIRE(m[3]["tool_calls"].size() == 2);
  CHECK(m[3]["tool_calls"][0] == Json{{"id", "call_1"}, {"type", "function"},
                                      {"function", {{"name", "exec_command"}, {"arguments", "{\"cmd\":\"touch a.txt\"}"}}}});
  CHECK(m[3]["tool_calls"][1]["id"] == "call_2");
  CHECK(m[4] == Json{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "done"}});
  CHECK(m[5] == Json{{"role", "tool"}, {"tool_call_id", "call_2"}, {"content", "a.txt"}});
  CHECK(m[6] == Json{{"role", "user"}, {"content", "thanks"}});
  REQUIRE(body["tools"].size() == 1);  // web_search and namespace have no chat form
  CHECK(body["tools"][0] == Json{{"type", "function"},
                                 {"function", {{"name", "exec_command"}, {"description", "run"},
                                               {"parameters", {{"type", "object"}, {"properties", {{"cmd", {{"type", "string"}}}}}}},
                                               {"strict", false}}}});
}

TEST_CASE("responses: string input, tool_choice and text.format") {
  ResponsesFormat format;
  Json req = {{"model", "m"}, {"input", "hi"},
              {"tool_choice", {{"type", "function"}, {"name", "f"}}},
              {"text", {{"format", {{"type", "json_schema"}, {"name", "r"}, {"schema", {{"type", "object"}}}}}}}};
  auto chat = format.ToChat(req);
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  CHECK(chat->body["messages"] == Json::array({{{"role", "user"}, {"content", "hi"}}}));
  CHECK(chat->body["tool_choice"] == Json{{"type", "function"}, {"function", {{"name", "f"}}}});
  CHECK(chat->body["response_format"]["json_schema"]["name"] == "r");
  CHECK(chat->state["store"] == true);  // the API's default
  CHECK_FALSE(chat->stream);
}

TEST_CASE("responses: bad client input is InvalidData naming the field") {
  ResponsesFormat format;
  auto expect = [&](Json req, const std::string& field) {
    auto chat = format.ToChat(req);
    REQUIRE_FALSE(chat.ok());
    CHECK(chat.status().kind() == Kind::kInvalidData);
    CHECK_MESSAGE(chat.status().message().find(field) != std::string::npos, chat.status().message());
  };
  Json ok = {{"model", "m"}, {"input", "hi"}};
  Json r = ok; r.erase("model"); expect(r, "model");
  r = ok; r.erase("input"); expect(r, "input");
  r = ok; r["input"] = 3; expect(r, "input");
  r = ok; r["input"] = {{{"type", "function_call"}, {"name", "f"}, {"arguments", "{}"}}}; expect(r, "input[0].call_id");
  r = ok; r["input"] = {{{"type", "item_reference"}, {"id", "x"}}}; expect(r, "input[0].type");
  r = ok; r["input"] = {{{"type", "message"}, {"role", "robot"}, {"content", "x"}}}; expect(r, "input[0].role");
  r = ok; r["input"] = {{{"role", "user"}, {"content", {{{"type", "input_file"}}}}}}; expect(r, "input[0].content[0].type");
  r = ok; r["tools"] = {{{"type", "function"}}}; expect(r, "tools[0].name");
  r = ok; r["tool_choice"] = "maybe"; expect(r, "tool_choice");
  r = ok; r["max_output_tokens"] = -1; expect(r, "max_output_tokens");
  r = ok; r["previous_response_id"] = "resp_nope"; expect(r, "previous_response_id");
}

TEST_CASE("responses: a chat response becomes a Responses object") {
  ResponsesFormat format;
  auto resp = format.FromChat(ScriptedResponse());
  REQUIRE_MESSAGE(resp.ok(), resp.status().message());
  CHECK((*resp)["id"] == "resp_abc123");
  CHECK((*resp)["object"] == "response");
  CHECK((*resp)["status"] == "completed");
  CHECK((*resp)["created_at"] == 1700000000);
  const Json& out = (*resp)["output"];
  REQUIRE(out.size() == 3);
  CHECK(out[0]["type"] == "reasoning");
  CHECK(out[0]["content"][0] == Json{{"type", "reasoning_text"}, {"text", "Need a file."}});
  CHECK(out[0]["encrypted_content"] == "forge-reasoning:Need a file.");
  CHECK(out[1] == Json{{"id", "msg_abc123"}, {"type", "message"}, {"status", "completed"}, {"role", "assistant"},
                       {"content", {{{"type", "output_text"}, {"text", "Hello world"}, {"annotations", Json::array()}}}}});
  CHECK(out[2] == Json{{"id", "fc_call_1"}, {"type", "function_call"}, {"status", "completed"}, {"call_id", "call_1"},
                       {"name", "write_file"}, {"arguments", "{\"path\": \"a.txt\", \"text\": \"hi\"}"}});
  CHECK((*resp)["usage"]["input_tokens"] == 12);
  CHECK((*resp)["usage"]["output_tokens"] == 9);
  CHECK((*resp)["usage"]["total_tokens"] == 21);

  Json cut = ScriptedResponse();
  cut["choices"][0]["finish_reason"] = "length";
  CHECK((*format.FromChat(cut))["status"] == "incomplete");
  CHECK((*format.FromChat(cut))["incomplete_details"]["reason"] == "max_output_tokens");
}

TEST_CASE("responses: the typed stream is written event by event with rising sequence numbers") {
  ResponsesFormat format;
  auto stream = format.NewStream();
  std::vector<std::vector<std::string>> per_chunk;
  std::vector<Event> all;
  for (const Json& chunk : ScriptedChunks()) {
    auto events = ParseEvents(stream->OnChunk(chunk));
    per_chunk.push_back(Types(events));
    all.insert(all.end(), events.begin(), events.end());
  }
  auto tail = ParseEvents(stream->OnEnd());
  all.insert(all.end(), tail.begin(), tail.end());
  using V = std::vector<std::string>;
  CHECK(per_chunk[0] == V{"response.created", "response.in_progress"});
  CHECK(per_chunk[1] == V{"response.output_item.added", "response.reasoning_text.delta"});
  CHECK(per_chunk[2] == V{"response.reasoning_text.done", "response.output_item.done",
                          "response.output_item.added", "response.content_part.added",
                          "response.output_text.delta"});
  CHECK(per_chunk[3] == V{"response.output_text.delta"});
  CHECK(per_chunk[4] == V{"response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.output_item.added"});
  CHECK(per_chunk[5] == V{"response.function_call_arguments.delta"});
  CHECK(per_chunk[6] == V{"response.function_call_arguments.delta"});
  CHECK(per_chunk[7] == V{"response.function_call_arguments.delta"});
  CHECK(per_chunk[8] == V{"response.function_call_arguments.done", "response.output_item.done"});
  CHECK(per_chunk[9].empty());
  CHECK(Types(tail) == V{"response.completed"});

  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].data["sequence_number"] == i);
    CHECK(all[i].name == all[i].data["type"]);
  }
  const Json& added = all[13].data;  // the function_call item
  CHECK(added["type"] == "response.output_item.added");
  CHECK(added["output_index"] == 2);
  CHECK(added["item"] == Json{{"id", "fc_call_1"}, {"type", "function_call"}, {"status", "in_progress"},
                              {"call_id", "call_1"}, {"name", "write_file"}, {"arguments", ""}});
  CHECK(all[14].data["delta"] == "{\"path\": ");
  CHECK(all[14].data["item_id"] == "fc_call_1");
  CHECK(all[17].data["arguments"] == "{\"path\": \"a.txt\", \"text\": \"hi\"}");
  CHECK(all[8].data["delta"] == "Hello");
  CHECK(all[10].data["text"] == "Hello world");

  auto unstreamed = format.FromChat(ScriptedResponse());
  REQUIRE(unstreamed.ok());
  CHECK(stream->Assembled() == *unstreamed);
  CHECK(tail[0].data["response"] == *unstreamed);
  // Each output_item.done carries the item exactly as in the final response.
  std::vector<Json> done;
  for (const Event& e : all) if (e.data["type"] == "response.output_item.done") done.push_back(e.data["item"]);
  CHECK(Json(done) == (*unstreamed)["output"]);
}

TEST_CASE("responses: an upstream failure mid-stream ends with response.failed") {
  ResponsesFormat format;
  auto stream = format.NewStream();
  auto chunks = ScriptedChunks();
  stream->OnChunk(chunks[0]);
  stream->OnChunk(chunks[2]);
  auto events = ParseEvents(stream->OnError("upstream died"));
  REQUIRE(events.size() == 1);
  CHECK(events[0].data["type"] == "response.failed");
  CHECK(events[0].data["sequence_number"] == 5);
  CHECK(events[0].data["response"]["status"] == "failed");
  CHECK(events[0].data["response"]["error"]["message"] == "upstream died");
  CHECK(events[0].data["response"]["output"].size() == 1);
  CHECK(stream->OnEnd().empty());
}

TEST_CASE("responses: previous_response_id continues a kept conversation; store:false keeps nothing") {
  auto state = std::make_shared<MemoryResponseStateStore>(2);
  ResponsesFormat format(state);
  Json first = {{"model", "m"}, {"instructions", "Be brief."}, {"input", "make a.txt"}};
  auto chat1 = format.ToChat(first);
  REQUIRE(chat1.ok());
  // Each call gets a fresh id (upstream completion ids repeat), used by the
  // answer, the stream and the kept state alike.
  std::string id1 = chat1->state["response_id"];
  CHECK(id1.rfind("resp_", 0) == 0);
  CHECK((*format.FromChat(ScriptedResponse()))["id"] == id1);
  auto stream = format.NewStream();
  for (const Json& chunk : ScriptedChunks()) stream->OnChunk(chunk);
  CHECK(stream->Assembled()["id"] == id1);
  format.Finished(*chat1, ScriptedResponse());
  REQUIRE(state->Get(id1));

  Json second = {{"model", "m"}, {"instructions", "Be terse."}, {"previous_response_id", id1},
                 {"input", {{{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "ok"}}}}};
  auto chat2 = format.ToChat(second);
  REQUIRE_MESSAGE(chat2.ok(), chat2.status().message());
  CHECK(chat2->state["response_id"] != id1);
  const Json& m = chat2->body["messages"];
  REQUIRE(m.size() == 4);
  CHECK(m[0] == Json{{"role", "system"}, {"content", "Be terse."}});  // instructions are not carried over
  CHECK(m[1] == Json{{"role", "user"}, {"content", "make a.txt"}});
  CHECK(m[2]["role"] == "assistant");
  CHECK(m[2]["tool_calls"][0]["id"] == "call_1");
  CHECK(m[2]["reasoning_content"] == "Need a file.");
  CHECK(m[3] == Json{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "ok"}});

  Json unstored = {{"model", "m"}, {"input", "x"}, {"store", false}};
  auto chat3 = format.ToChat(unstored);
  REQUIRE(chat3.ok());
  format.Finished(*chat3, ScriptedResponse());
  CHECK_FALSE(state->Get(chat3->state["response_id"].get<std::string>()));

  // The bound holds: the oldest conversation goes first.
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    auto chat = format.ToChat(first);
    REQUIRE(chat.ok());
    format.Finished(*chat, ScriptedResponse());
    ids.push_back(chat->state["response_id"]);
  }
  CHECK(state->size() == 2);
  CHECK_FALSE(state->Get(id1));
  CHECK(state->Get(ids[1]));
}

TEST_CASE("responses: error bodies and side calls") {
  ResponsesFormat format;
  CHECK(format.ErrorBody(400, "bad")["error"] ==
        Json{{"message", "bad"}, {"type", "invalid_request_error"}, {"param", nullptr}, {"code", nullptr}});
  CHECK(format.ErrorBody(502, "x")["error"]["type"] == "server_error");
  Json title = {{"model", "small"}, {"instructions", "You are a title generator. Output a title."},
                {"input", "fix the tests"}};
  CHECK(format.ToChat(title)->side_call);
}

TEST_CASE("responses: a token's delta event is the bytes of the document it stands for") {
  const std::string tricky = "say \"hi\"\\n\n\t\x01 é 😀";
  ResponsesFormat format;
  auto stream = format.NewStream();
  std::string start = stream->OnChunk(Chunk({{"role", "assistant"}, {"content", ""}}));
  std::string first = stream->OnChunk(Chunk({{"content", tricky}}));
  // The events before it: created, in_progress, output_item.added, content_part.added.
  auto events = ParseEvents(start + first);
  REQUIRE(events.size() == 5);
  const Json& item_added = events[2].data;
  std::string want = forge::proxy::wire::SseFrame(
      "response.output_text.delta", {{"type", "response.output_text.delta"},
                                     {"sequence_number", 4},
                                     {"item_id", item_added["item"]["id"]},
                                     {"output_index", 0},
                                     {"content_index", 0},
                                     {"delta", tricky},
                                     {"logprobs", Json::array()}});
  CHECK(first.substr(first.size() - want.size()) == want);
}

TEST_CASE("responses: a namespaced tool (Codex's MCP tools) reaches the policy as NS__NAME and its call names the namespace again") {
  // Codex 0.171 groups an MCP server's tools as a "namespace" tool and runs
  // one only when the call carries "namespace" (checked against the real
  // binary: a call named mcp__codes__secret_code alone is not run).
  Json request = Json::parse(R"({
    "model": "gpt-5", "stream": true,
    "input": [
      {"type":"message","role":"user","content":"get the code"},
      {"type":"function_call","call_id":"call_0","name":"secret_code","namespace":"mcp__codes","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_0","output":"mcp-code-7391"}
    ],
    "tools": [
      {"type":"function","name":"exec_command","parameters":{"type":"object","properties":{}}},
      {"type":"namespace","name":"mcp__codes","description":"Tools in the mcp__codes namespace.","tools":[
        {"type":"function","name":"secret_code","description":"Returns the code.","parameters":{"type":"object","properties":{}},"strict":false}]}
    ]
  })");
  ResponsesFormat format;
  auto chat = format.ToChat(request);
  REQUIRE_MESSAGE(chat.ok(), chat.status().message());
  const Json& tools = chat->body["tools"];
  REQUIRE(tools.size() == 2);
  CHECK(tools[0]["function"]["name"] == "exec_command");
  CHECK(tools[1]["function"] == Json{{"name", "mcp__codes__secret_code"}, {"description", "Returns the code."},
                                     {"parameters", {{"type", "object"}, {"properties", Json::object()}}},
                                     {"strict", false}});
  const Json& replayed = chat->body["messages"][1]["tool_calls"][0]["function"];
  CHECK(replayed["name"] == "mcp__codes__secret_code");  // the history as the policy said it

  auto call_chunk = [](const std::string& name) {
    return Chunk(ToolDelta(0, {{"id", "call_1"}, {"type", "function"},
                               {"function", {{"name", name}, {"arguments", "{}"}}}}));
  };
  // mcp__late__lookup: an MCP tool the request did not list (its server came
  // up after the request was made) is split by Codex's own spelling.
  for (const char* name : {"mcp__codes__secret_code", "exec_command", "mcp__late__lookup"}) {
    CAPTURE(name);
    auto stream = format.NewStream();
    std::vector<Event> events;
    for (const Json& chunk : {Chunk({{"role", "assistant"}}), call_chunk(name), Chunk(Json::object(), "tool_calls")}) {
      auto more = ParseEvents(stream->OnChunk(chunk));
      events.insert(events.end(), more.begin(), more.end());
    }
    auto tail = ParseEvents(stream->OnEnd());
    REQUIRE(tail.size() == 1);
    Json item = tail[0].data["response"]["output"][0];
    std::string n = name;
    bool namespaced = n != "exec_command";
    CHECK(item["name"] == (n == "exec_command" ? "exec_command" : n == "mcp__late__lookup" ? "lookup" : "secret_code"));
    CHECK(item.contains("namespace") == namespaced);
    if (namespaced) CHECK(item["namespace"] == (n == "mcp__late__lookup" ? "mcp__late" : "mcp__codes"));
    for (const Event& e : events) {
      if (e.data["type"] == "response.output_item.added" || e.data["type"] == "response.output_item.done") {
        CHECK(e.data["item"]["name"] == item["name"]);
        CHECK(e.data["item"].value("namespace", "") == item.value("namespace", ""));
      }
    }
    Json whole = {{"id", "chatcmpl-1"}, {"object", "chat.completion"}, {"created", 1}, {"model", "policy"},
                  {"choices", Json::array({{{"index", 0}, {"finish_reason", "tool_calls"},
                                            {"message", {{"role", "assistant"}, {"content", nullptr},
                                                         {"tool_calls", Json::array({{{"id", "call_1"}, {"type", "function"},
                                                                                      {"function", {{"name", name}, {"arguments", "{}"}}}}})}}}}})}};
    auto unstreamed = format.FromChat(whole);
    REQUIRE(unstreamed.ok());
    CHECK((*unstreamed)["output"][0]["name"] == item["name"]);
    CHECK((*unstreamed)["output"][0].value("namespace", "") == item.value("namespace", ""));
  }
}
