// Unit tests of forge-proxy's replay index (recorded-exchange files), the
// Anthropic upstream's stream assembly and upstream URL parsing (https).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "proxy/anthropic_upstream.h"
#include "proxy/replay.h"
#include "proxy/upstream_asio.h"
#include "support/temp_dir.h"
#include "support/fake_env.h"

// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace proxy_replay_test {
using namespace forge::proxy;
using forge::Kind;
using forge::Status;
using forge::testing::TempDir;
using Json = nlohmann::json;

namespace {

Json RecordedCall(const std::string& user, const std::string& answer) {
  return {{"schema", "forge.call/1"},
          {"client_format", "openai-chat"},
          {"model", "policy"},
          {"request", {{"model", "policy"}, {"messages", Json::array({{{"role", "user"}, {"content", user}}})}}},
          {"upstream_response",
           {{"id", "c1"},
            {"object", "chat.completion"},
            {"choices", Json::array({{{"index", 0},
                                      {"message", {{"role", "assistant"}, {"content", answer}}},
                                      {"finish_reason", "stop"}}})}}},
          {"prompt_ids", {1, 2, 3}},
          {"completion_ids", {7, 8}},
          {"logprobs", {-0.5, nullptr}},
          {"http_status", 200},
          {"error", ""}};
}

std::string KeyOf(const Json& call) {
  return ReplayIndex::RequestKey(call["client_format"].get<std::string>(), call["request"]);
}

}  // namespace

TEST_CASE("replay: a recorded call is served with its token data; samples of one request in turn") {
  ReplayIndex index;
  Json a = RecordedCall("hi", "first");
  Json b = RecordedCall("hi", "second");
  b["completion_ids"] = {9};
  REQUIRE(index.Add(a).ok());
  REQUIRE(index.Add(b).ok());
  CHECK(index.size() == 2);
  CHECK(index.models() == std::vector<std::string>{"policy"});
  const RecordedExchange* one = index.Next(KeyOf(a));
  const RecordedExchange* two = index.Next(KeyOf(a));
  const RecordedExchange* three = index.Next(KeyOf(a));
  REQUIRE(one);
  REQUIRE(two);
  CHECK(one->response["choices"][0]["message"]["content"] == "first");
  CHECK(two->response["choices"][0]["message"]["content"] == "second");
  CHECK(three == one);  // round and round
  CHECK(one->prompt_ids == std::vector<int32_t>{1, 2, 3});
  CHECK(one->completion_ids == std::vector<int32_t>{7, 8});
  CHECK(two->completion_ids == std::vector<int32_t>{9});
  REQUIRE(one->logprobs.size() == 2);
  CHECK(one->logprobs[0] == doctest::Approx(-0.5));
  CHECK(std::isinf(one->logprobs[1]));  // null: a -inf that JSON cannot hold
  // The stream flag is not part of the match; the format and content are.
  Json streamed = a["request"];
  streamed["stream"] = true;
  CHECK(index.Next(ReplayIndex::RequestKey("openai-chat", streamed)) != nullptr);
  CHECK(index.Next(ReplayIndex::RequestKey("anthropic", a["request"])) == nullptr);
  CHECK(index.Next(KeyOf(RecordedCall("other", "x"))) == nullptr);
}

TEST_CASE("replay: failed calls are skipped quietly; unservable lines are InvalidData naming the field") {
  ReplayIndex index;
  Json failed = RecordedCall("hi", "x");
  failed["http_status"] = 502;
  CHECK(index.Add(failed).ok());
  Json errored = RecordedCall("hi", "x");
  errored["error"] = "upstream broke off";
  CHECK(index.Add(errored).ok());
  CHECK(index.size() == 0);

  auto expect_field = [&](Json call, const std::string& field) {
    Status s = index.Add(call);
    CHECK(s.kind() == Kind::kInvalidData);
    CHECK_MESSAGE(s.message().find(field) != std::string::npos, s.message());
  };
  Json c = RecordedCall("hi", "x");
  c.erase("client_format");
  expect_field(c, "client_format");
  c = RecordedCall("hi", "x");
  c["client_format"] = "telepathy";
  expect_field(c, "client_format");
  c = RecordedCall("hi", "x");
  c["request"] = "hi";
  expect_field(c, "request");
  c = RecordedCall("hi", "x");
  c.erase("upstream_response");
  expect_field(c, "upstream_response");
  c = RecordedCall("hi", "x");
  c["upstream_response"]["choices"] = Json::array();
  expect_field(c, "upstream_response.choices");
  c = RecordedCall("hi", "x");
  c["completion_ids"] = {1, "two"};
  expect_field(c, "completion_ids");
  c = RecordedCall("hi", "x");
  c["prompt_ids"] = {int64_t{1} << 40};
  expect_field(c, "prompt_ids");
  c = RecordedCall("hi", "x");
  c["logprobs"] = "none";
  expect_field(c, "logprobs");
  c = RecordedCall("hi", "x");
  c["schema"] = "forge.call/2";
  expect_field(c, "schema");
  c = RecordedCall("hi", "x");
  c["http_status"] = "200";
  expect_field(c, "http_status");
  CHECK(index.Add(Json::array()).kind() == Kind::kInvalidData);
  CHECK(index.size() == 0);
}

TEST_CASE("replay: a recorded-exchange file with bad lines loads the good ones") {
  TempDir dir;
  std::string path = dir.File("exchanges.jsonl");
  {
    std::ofstream out(path);
    out << RecordedCall("one", "1").dump() << "\n"
        << "{not json\n"
        << Json{{"client_format", "openai-chat"}}.dump() << "\n"
        << "\n"
        << RecordedCall("two", "2").dump() << "\n";
  }
  forge::testing::FakeEnv env;
  auto index = ReplayIndex::Load(path, env);  // not SQLite: read as JSON Lines
  REQUIRE_MESSAGE(index.ok(), index.status().message());
  CHECK((*index)->size() == 2);
  CHECK((*index)->bad_lines() == 2);
  // Both named with their line: the malformed one by the reader, the one that
  // cannot be served by the index.
  CHECK(env.Reported("error", path + ":2: "));
  CHECK(env.Reported("warning", path + ":3: "));
  CHECK((*index)->Next(KeyOf(RecordedCall("two", "2"))) != nullptr);

  std::string useless = dir.File("useless.jsonl");
  std::ofstream(useless) << "[1]\n";
  auto none = ReplayIndex::Load(useless, env);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().kind() == Kind::kInvalidData);
  CHECK(none.status().message().find("useless.jsonl") != std::string::npos);
  auto missing = ReplayIndex::Load(dir.File("missing.jsonl"), env);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().kind() == Kind::kNotFound);
}

TEST_CASE("anthropic upstream: a Messages stream assembles as the SDK would") {
  AnthropicMessageAssembler a;
  auto add = [&](const char* type, Json data) {
    data["type"] = type;
    a.Add(type, data);
  };
  add("message_start", {{"message", {{"id", "msg_1"}, {"role", "assistant"}, {"content", Json::array()},
                                     {"usage", {{"input_tokens", 5}, {"output_tokens", 1}}}}}});
  add("ping", Json::object());
  add("content_block_start", {{"index", 0}, {"content_block", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}}});
  add("content_block_delta", {{"index", 0}, {"delta", {{"type", "thinking_delta"}, {"thinking", "hm"}}}});
  add("content_block_delta", {{"index", 0}, {"delta", {{"type", "signature_delta"}, {"signature", "s1"}}}});
  add("content_block_stop", {{"index", 0}});
  add("content_block_start", {{"index", 1}, {"content_block", {{"type", "text"}, {"text", ""}}}});
  add("content_block_delta", {{"index", 1}, {"delta", {{"type", "text_delta"}, {"text", "Hel"}}}});
  add("content_block_delta", {{"index", 1}, {"delta", {{"type", "text_delta"}, {"text", "lo"}}}});
  add("content_block_stop", {{"index", 1}});
  add("content_block_start", {{"index", 2}, {"content_block", {{"type", "tool_use"}, {"id", "t"}, {"name", "f"}, {"input", Json::object()}}}});
  add("content_block_delta", {{"index", 2}, {"delta", {{"type", "input_json_delta"}, {"partial_json", "{\"a\":"}}}});
  add("content_block_delta", {{"index", 2}, {"delta", {{"type", "input_json_delta"}, {"partial_json", "1}"}}}});
  add("content_block_stop", {{"index", 2}});
  CHECK_FALSE(a.stopped());
  add("message_delta", {{"delta", {{"stop_reason", "tool_use"}, {"stop_sequence", nullptr}}}, {"usage", {{"output_tokens", 9}}}});
  add("message_stop", Json::object());
  CHECK(a.stopped());
  CHECK(a.error().empty());
  Json m = a.Result();
  CHECK(m["content"][0] == Json{{"type", "thinking"}, {"thinking", "hm"}, {"signature", "s1"}});
  CHECK(m["content"][1] == Json{{"type", "text"}, {"text", "Hello"}});
  CHECK(m["content"][2]["input"] == Json{{"a", 1}});
  CHECK(m["stop_reason"] == "tool_use");
  CHECK(m["usage"] == Json{{"input_tokens", 5}, {"output_tokens", 9}});

  AnthropicMessageAssembler broken;
  broken.Add("error", {{"type", "error"}, {"error", {{"type", "overloaded_error"}, {"message", "Overloaded"}}}});
  CHECK(broken.error() == "Overloaded");
  // Out-of-order or malformed events do not crash the assembly.
  broken.Add("content_block_delta", {{"type", "content_block_delta"}, {"index", 7}, {"delta", {{"type", "text_delta"}, {"text", "x"}}}});
  broken.Add("content_block_stop", {{"type", "content_block_stop"}, {"index", 7}});
  broken.Add("message_delta", Json::array());
  CHECK_FALSE(broken.stopped());
  // Mistyped fields from a hostile upstream: skipped, never thrown on, and a
  // huge index allocates nothing.
  AnthropicMessageAssembler hostile;
  for (const char* text : {
           R"({"type":"message_start","message":{"content":["not a block"]}})",
           R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}})",
           R"({"type":"content_block_start","index":1000000000000,"content_block":{"type":"text"}})",
           R"({"type":"content_block_start","index":"1","content_block":"text"})",
           R"({"type":"content_block_start","index":1,"content_block":"text"})",
           R"({"type":"content_block_delta","index":1,"delta":{"type":7,"text":"x"}})",
           R"({"type":5})",
           R"({"type":"error","error":{"message":42}})"}) {
    CHECK_NOTHROW(hostile.Add("", Json::parse(text)));
  }
  CHECK(hostile.Result()["content"].size() == 2);
  CHECK(hostile.error() == R"({"message":42})");
}

TEST_CASE("upstreams: http and https URLs, default ports, refused schemes and CA files") {
  asio::io_context io;
  auto pool = UpstreamPool::Create(io, {"http://127.0.0.1:8001/v1", "https://127.0.0.1/api/v1/", "https://localhost:8443"}, "");
  REQUIRE_MESSAGE(pool.ok(), pool.status().message());
  CHECK_FALSE((*pool)->at(0).tls);
  CHECK((*pool)->at(0).port == "8001");
  CHECK((*pool)->at(0).base_path == "");
  CHECK((*pool)->at(1).tls);
  CHECK((*pool)->at(1).port == "443");
  CHECK((*pool)->at(1).base_path == "/api");
  CHECK((*pool)->at(2).port == "8443");
  auto ftp = UpstreamPool::Create(io, {"ftp://127.0.0.1:21"}, "");
  REQUIRE_FALSE(ftp.ok());
  CHECK(ftp.status().kind() == Kind::kBadConfig);
  TempDir dir;
  auto no_ca = UpstreamPool::Create(io, {"https://127.0.0.1:1"}, "", dir.File("none.pem"));
  REQUIRE_FALSE(no_ca.ok());
  CHECK(no_ca.status().kind() == Kind::kBadConfig);
  CHECK(no_ca.status().message().find("none.pem") != std::string::npos);
  // The CA file is only read when an upstream is https.
  CHECK(UpstreamPool::Create(io, {"http://127.0.0.1:1"}, "", dir.File("none.pem")).ok());
}

}  // namespace proxy_replay_test
