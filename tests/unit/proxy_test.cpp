// Unit tests of forge-proxy's pure parts: SSE parsing, token capture and
// stripping, stream assembly, retry keys, the format registry.
#include <doctest/doctest.h>

#include <set>

#include "proxy/chat_assembler.h"
#include "proxy/format_registry.h"
#include "proxy/replay.h"
#include "proxy/retry_keys.h"
#include "proxy/sse.h"
#include "proxy/token_capture.h"

// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace proxy_test {
using namespace forge::proxy;
using Json = nlohmann::json;

TEST_CASE("sse: events split across reads, CRLF, comments, multi-line data") {
  SseParser p;
  std::vector<SseEvent> out;
  p.Feed("data: {\"a\"", out);
  CHECK(out.empty());
  p.Feed(":1}\r\n\r\n: keepalive\n\nevent: x\ndata: l1\ndata: l2\n\ndata: [DONE]\n", out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].data == "{\"a\":1}");
  CHECK(out[1].event == "x");
  CHECK(out[1].data == "l1\nl2");
  p.Feed("\n", out);
  REQUIRE(out.size() == 3);
  CHECK(out[2].data == "[DONE]");
}

TEST_CASE("capture: asks for ids and logprobs, remembers what the client wanted") {
  Json chat = {{"messages", Json::array()}};
  CaptureWants w = AddCaptureFields(chat, false);
  CHECK(chat["return_token_ids"] == true);
  CHECK(chat["logprobs"] == true);
  CHECK(chat["top_logprobs"] == 0);
  CHECK_FALSE(w.logprobs);
  Json asked = {{"logprobs", true}, {"top_logprobs", 3}};
  w = AddCaptureFields(asked, false);
  CHECK(w.logprobs);
  CHECK(asked["top_logprobs"] == 3);
  Json completion = {{"prompt", "x"}};
  w = AddCaptureFields(completion, true);
  CHECK(completion["logprobs"] == 0);
  CHECK_FALSE(w.logprobs);
}

TEST_CASE("capture: vLLM fields harvested from a response, then stripped") {
  Json r = Json::parse(R"({"prompt_token_ids":[1,2,3],"choices":[{"index":0,"token_ids":[7,8],
    "message":{"content":"hi"},"logprobs":{"content":[{"token":"h","logprob":-0.5},{"token":"i","logprob":-1.5}]}}]})");
  CapturedTokens t;
  HarvestTokens(r, t);
  CHECK(t.prompt_ids == std::vector<int32_t>{1, 2, 3});
  CHECK(t.completion_ids == std::vector<int32_t>{7, 8});
  CHECK(t.logprobs == std::vector<float>{-0.5f, -1.5f});
  StripCaptureFields(r, CaptureWants{});
  CHECK_FALSE(r.contains("prompt_token_ids"));
  CHECK_FALSE(r["choices"][0].contains("token_ids"));
  CHECK(r["choices"][0]["logprobs"].is_null());
  CHECK(r["choices"][0]["message"]["content"] == "hi");
}

TEST_CASE("capture: token_id:N logprob tokens give ids; deltas append") {
  CapturedTokens t;
  HarvestTokens(Json::parse(R"({"choices":[{"index":0,"logprobs":{"content":[{"token":"token_id:42","logprob":-0.1}]}}]})"), t);
  HarvestTokens(Json::parse(R"({"choices":[{"index":0,"logprobs":{"content":[{"token":"token_id:43","logprob":-0.2}]}}]})"), t);
  CHECK(t.completion_ids == std::vector<int32_t>{42, 43});
  CHECK(t.logprobs.size() == 2);
  // Completions: prompt ids on the choice, token_logprobs list.
  CapturedTokens c;
  HarvestTokens(Json::parse(R"({"choices":[{"index":0,"prompt_token_ids":[5],"token_ids":[9],"logprobs":{"tokens":["a"],"token_logprobs":[-0.25]}}]})"), c);
  CHECK(c.prompt_ids == std::vector<int32_t>{5});
  CHECK(c.completion_ids == std::vector<int32_t>{9});
  CHECK(c.logprobs == std::vector<float>{-0.25f});
}

TEST_CASE("capture: what the client asked for is kept") {
  Json r = Json::parse(R"({"prompt_token_ids":[1],"choices":[{"index":0,"token_ids":[7],"logprobs":{"content":[]}}]})");
  CaptureWants w;
  w.logprobs = true;
  w.token_ids = true;
  StripCaptureFields(r, w);
  CHECK(r.contains("prompt_token_ids"));
  CHECK(r["choices"][0].contains("token_ids"));
  CHECK(r["choices"][0]["logprobs"].is_object());
}

// The proxy folds most stream chunks from their text (AddContentDelta) and
// parses the rest; a stream must assemble to the same response either way.
TEST_CASE("assembler: chunks folded from their text give what parsing every chunk gives") {
  const std::vector<std::vector<std::string>> streams = {
      {R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"He"},"logprobs":null,"finish_reason":null}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"llo \"q\" \u00e9\n\ud83d\ude00"},"logprobs":null,"finish_reason":null}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a","content":"b"}}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":null}}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"late","choices":[{"index":0,"delta":{"content":"!"}}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":-0.5}]}}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":7}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}})"},
      {R"({"id":"c2","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]})",
       R"({"id":"c2","model":"m","choices":[{"index":0,"delta":{"reasoning_content":"think"}}]})",
       R"({"id":"c2","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]})",
       R"({"id":"c2","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]})",
       R"({"id":"c2","model":"m","choices":[{"index":1,"delta":{"content":"second choice"}},{"index":0,"delta":{"content":"first"}}]})",
       R"({"id":"c2","model":"m","choices":[{"index":1,"delta":{"content":" more"}}]})",
       R"({"id":"c2","model":"m","choices":[{"index":"1","delta":{"content":"odd index"}}]})",
       R"({"id":"c2","model":"m","usage":null,"choices":[{"index":0,"delta":{"content":"u"},"unknown":{"k":[1]}}],"extra":true})"},
      {R"({"id":"c3","object":"text_completion","model":"m","choices":[{"index":0,"text":"ab"}]})",
       R"({"id":"c3","object":"text_completion","model":"m","choices":[{"index":0,"text":"cd"}]})",
       R"({"id":"c3","object":"text\u005fcompletion","model":"m","choices":[{"index":0,"delta":{"content":"z"}}]})"},
  };
  const std::vector<int> folded_chunks = {4, 2, 0};  // the rest need the parser
  for (size_t k = 0; k < streams.size(); ++k) {
    const auto& stream = streams[k];
    CAPTURE(stream.front());
    ChatAssembler parsed, folded;
    int fast = 0;
    for (const std::string& chunk : stream) {
      try {
        parsed.Add(Json::parse(chunk));
      } catch (const Json::exception&) {
        // The slow path's own limits (e.g. an index that is a string) are not the subject here.
        continue;
      }
      if (folded.AddContentDelta(chunk)) {
        ++fast;
      } else {
        folded.Add(Json::parse(chunk));
      }
    }
    CHECK(folded.Result() == parsed.Result());
    CHECK(fast == folded_chunks[k]);
  }
  // The first chunk sets the head, so it is never folded from text.
  ChatAssembler fresh;
  CHECK(!fresh.AddContentDelta(R"({"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]})"));
  CHECK(fresh.empty());
}

TEST_CASE("assembler: content, tool-call fragments, finish reason, usage") {
  ChatAssembler a;
  a.Add(Json::parse(R"({"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"He"}}]})"));
  a.Add(Json::parse(R"({"choices":[{"index":0,"delta":{"content":"llo"}}]})"));
  a.Add(Json::parse(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]})"));
  a.Add(Json::parse(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": 1}"}}]}}]})"));
  a.Add(Json::parse(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})"));
  a.Add(Json::parse(R"({"choices":[],"usage":{"completion_tokens":5}})"));
  Json r = a.Result();
  CHECK(r["object"] == "chat.completion");
  CHECK(r["id"] == "c1");
  CHECK(r["choices"][0]["message"]["content"] == "Hello");
  CHECK(r["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{\"a\": 1}");
  CHECK(r["choices"][0]["message"]["tool_calls"][0]["id"] == "call_1");
  CHECK(r["choices"][0]["finish_reason"] == "tool_calls");
  CHECK(r["usage"]["completion_tokens"] == 5);
}

TEST_CASE("mistyped upstream fields: the assembler and capture and every format's stream skip them and never throw") {
  // Found by fuzz_gemini: {"index": "tool_calls"} made nlohmann's value<int>() throw.
  const char* chunks[] = {
      R"({"id":5,"model":[1],"object":7,"choices":[{"index":"tool_calls","delta":{"content":"x"}}]})",
      R"({"choices":[{"index":-1,"delta":{"content":"x"}},{"index":1.5,"delta":{"content":"y"}}]})",
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":"a","function":{"name":"f"}},{"index":1000000000000,"function":{"name":"g"}}]}}]})",
      R"({"choices":[{"delta":{"content":"ok"}}]})"};
  ChatAssembler a;
  CapturedTokens tokens;
  std::vector<std::unique_ptr<StreamTranslator>> streams;
  for (const char* name : {"openai-chat", "anthropic", "responses", "gemini"}) {
    streams.push_back(MakeClientFormat(name)->NewStream());
  }
  for (const char* text : chunks) {
    Json chunk = Json::parse(text);
    CHECK_NOTHROW(a.Add(chunk));
    CHECK_NOTHROW(HarvestTokens(chunk, tokens));
    for (auto& stream : streams) CHECK_NOTHROW(stream->OnChunk(chunk));
  }
  Json r = a.Result();
  CHECK(r["choices"][0]["message"]["content"] == "ok");
  CHECK_FALSE(r["choices"][0]["message"].contains("tool_calls"));
  for (auto& stream : streams) CHECK_NOTHROW(stream->OnEnd());
  // A whole answer with mistyped id and model: translated, not thrown on.
  Json whole = Json::parse(R"({"id":5,"model":[1],"choices":[{"index":0,"message":{"role":"assistant",
    "content":"ok","tool_calls":[{"id":9,"type":"function","function":{"name":"f","arguments":"{}"}}]},
    "finish_reason":"tool_calls"}]})");
  for (const char* name : {"anthropic", "responses", "gemini"}) {
    auto format = MakeClientFormat(name);
    CHECK_NOTHROW(format->FromChat(whole));
  }
  // ... and replayed from a recording (forge-proxy --replay).
  CHECK_NOTHROW(ChatResponseToChunks(whole));
  CHECK_NOTHROW(ChatResponseToChunks(Json::parse(R"({"object":1,"created":"x","choices":["a",{"message":{"tool_calls":["b"]}}]})")));
  CHECK(ChatResponseToChunks(Json::parse(R"({"choices":"x"})")).empty());
}

TEST_CASE("mistyped usage, names and flags: counted as absent, never thrown on") {
  // Found by fuzz_anthropic: {"usage":{"prompt_tokens":"a"}} threw in the
  // Anthropic stream's OnEnd (nlohmann's value<int64_t>()).
  const char* usages[] = {
      R"({"prompt_tokens":"a","completion_tokens":[1],"prompt_tokens_details":{"cached_tokens":"x"}})",
      R"({"prompt_tokens":1e300,"completion_tokens":-2.5,"completion_tokens_details":{"reasoning_tokens":true}})",
      R"({"prompt_tokens":18446744073709551615,"completion_tokens":null})", R"("usage")", R"([3])"};
  for (const char* usage : usages) {
    CAPTURE(usage);
    Json chunk = Json::parse(std::string(R"({"id":"c","choices":[{"index":0,"delta":{"content":"x",)") +
                             R"("tool_calls":[{"index":0,"function":{"name":7,"arguments":[1]}}]}}],"usage":)" +
                             usage + "}");
    Json whole = Json::parse(std::string(R"({"id":"c","created":"now","choices":[{"index":0,"message":)") +
                             R"({"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":)" + usage + "}");
    for (const char* name : {"openai-chat", "anthropic", "responses", "gemini"}) {
      CAPTURE(name);
      auto format = MakeClientFormat(name);
      auto stream = format->NewStream();
      CHECK_NOTHROW(stream->OnChunk(chunk));
      CHECK_NOTHROW(stream->OnEnd());
      CHECK_NOTHROW(format->FromChat(whole));
    }
  }
  // The Anthropic answer counts a mistyped field as zero, the others as sent.
  auto anthropic = MakeClientFormat("anthropic");
  auto answer = anthropic->FromChat(Json::parse(R"({"id":"c","choices":[{"index":0,"message":{"role":"assistant",
    "content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"a","completion_tokens":4}})"));
  REQUIRE(answer.ok());
  CHECK((*answer)["usage"]["input_tokens"] == 0);
  CHECK((*answer)["usage"]["output_tokens"] == 4);
  // A client's flags of the wrong type are off, not an exception.
  Json request = Json::parse(R"({"model":"m","messages":[],"stream":"yes","return_token_ids":"x","logprobs":"y"})");
  CaptureWants wants;
  CHECK_NOTHROW(wants = AddCaptureFields(request, false));
  CHECK_FALSE(wants.token_ids);
  CHECK_FALSE(wants.logprobs);
  auto chat = MakeClientFormat("openai-chat")->ToChat(request);
  REQUIRE_FALSE(chat.ok());
  CHECK(chat.status().message().find("stream: must be a boolean") != std::string::npos);
}

TEST_CASE("replay: a recorded response becomes chunks that assemble back to it") {
  Json whole = Json::parse(R"({"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,
    "message":{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
    "finish_reason":"tool_calls","logprobs":null}],"usage":{"total_tokens":3}})");
  ChatAssembler a;
  for (const auto& chunk : ChatResponseToChunks(whole)) a.Add(chunk);
  Json back = a.Result();
  CHECK(back["choices"][0]["message"]["content"] == "hi");
  CHECK(back["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "f");
  CHECK(back["usage"]["total_tokens"] == 3);
  Json streamed = {{"a", 1}, {"stream", true}};
  Json plain = {{"a", 1}};
  CHECK(ReplayIndex::RequestKey("openai-chat", streamed) == ReplayIndex::RequestKey("openai-chat", plain));
  CHECK(ReplayIndex::RequestKey("openai-chat", plain) != ReplayIndex::RequestKey("anthropic", plain));
}

TEST_CASE("retry keys: a marked retry reuses the key, a fresh call does not") {
  RetryKeys keys;
  std::string first = keys.KeyFor("r", "h", 0);
  CHECK(keys.KeyFor("r", "h", 1) == first);
  CHECK(keys.KeyFor("r", "h", 2) == first);
  std::string fresh = keys.KeyFor("r", "h", 0);
  CHECK(fresh != first);
  CHECK(keys.KeyFor("r", "h", -1) != fresh);  // no header: always a new call
  CHECK(keys.KeyFor("other", "h", 1) != keys.KeyFor("r", "h", 1));
}

TEST_CASE("retry keys: a proxy after a restart never gives a key an earlier one gave") {
  // The store drops a call whose key it holds: a redone attempt's first call
  // (same rollout id, same body) after a restart must not look like a retry.
  std::set<std::string> given;
  for (int process = 0; process < 3; ++process) {
    RetryKeys keys;
    std::string first = keys.KeyFor("r", "the same first request", 0);
    CHECK(given.insert(first).second);
    CHECK(keys.KeyFor("r", "the same first request", 1) == first);
  }
}

TEST_CASE("retry keys: what is remembered is bounded, and forgetting only costs a duplicate") {
  RetryKeys keys(100);
  std::string early = keys.KeyFor("r", "body 0", 0);
  std::set<std::string> given{early};
  for (int i = 1; i < 1000; ++i) {
    CHECK(given.insert(keys.KeyFor("r" + std::to_string(i % 7), "body " + std::to_string(i), 0)).second);
    CHECK(keys.remembered() <= 100);
  }
  // Forgotten: the retry is a new call (recorded again), never another call's key.
  std::string retried = keys.KeyFor("r", "body 0", 1);
  CHECK(retried != early);
  CHECK(given.insert(retried).second);
  std::string recent = keys.KeyFor("r5", "body 999", 0);
  CHECK(keys.KeyFor("r5", "body 999", 3) == recent);
}

TEST_CASE("registry: routes and formats") {
  const Route* chat = FindRoute("POST", "/v1/chat/completions");
  REQUIRE(chat != nullptr);
  CHECK(chat->format == FormatId::kOpenAIChat);
  CHECK(FindRoute("GET", "/v1/chat/completions") == nullptr);
  CHECK(FindRoute("POST", "/v1/completions")->upstream_path == "/v1/completions");
  auto format = MakeClientFormat("openai-chat");
  REQUIRE(format);
  CHECK(format->name() == "openai-chat");
  CHECK_FALSE(format->ToChat(Json::parse(R"({"messages":"x"})")).ok());
  CHECK(format->ToChat(Json::parse(R"({"messages":[{"role":"user","content":"x"}],"stream":true})"))->stream);
  CHECK(format->ErrorBody(401, "no")["error"]["code"] == "invalid_api_key");
  CHECK(MakeClientFormat("nope") == nullptr);
}

TEST_CASE("registry: a format made by its id is the one its name makes") {
  for (FormatId id : {FormatId::kOpenAIChat, FormatId::kOpenAICompletions, FormatId::kAnthropic,
                      FormatId::kAnthropicCountTokens, FormatId::kResponses, FormatId::kGemini,
                      FormatId::kGeminiCountTokens}) {
    auto by_id = MakeClientFormat(id);
    REQUIRE(by_id);
    auto by_name = MakeClientFormat(by_id->name());
    REQUIRE(by_name);
    CHECK(by_name->name() == by_id->name());
  }
  CHECK(FindRoute("POST", "/v1/completions")->completions());
  CHECK(FindRoute("POST", "/v1/completions")->passes_through());
  CHECK_FALSE(FindRoute("POST", "/v1/messages")->passes_through());
  CHECK(ReadClientUrl(*FindRoute("POST", "/v1beta/models/*"), "/v1beta/models/g:countTokens").format ==
        FormatId::kGeminiCountTokens);
}

}  // namespace proxy_test
