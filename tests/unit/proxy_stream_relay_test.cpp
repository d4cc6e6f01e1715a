// The one-walk relay of a chat stream's common chunk (proxy/stream_relay.h)
// against the full way it stands in for: CaptureAndStrip, then the
// assembler's fold of the stripped text or the parsed chunk. Every stream,
// for every combination of what the client asked for, must give the same
// bytes, the same tokens and the same assembled response.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/json_parse.h"
#include "proxy/chat_assembler.h"
#include "proxy/pass_through.h"
#include "proxy/stream_relay.h"

// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace proxy_stream_relay_test {
using namespace forge::proxy;
using Json = nlohmann::json;

namespace {

struct Relayed {
  std::string out;
  CapturedTokens tokens;
  Json assembled;
  Json assembled_text;  // the assembler's ResultText, parsed
  std::string finish_reason;
  int fast = 0;  // chunks the one-walk relay took
  bool failed = false;
};

// The OpenAI upstream's loop over a pass-through stream's chunks (openai_upstream.cpp), with or without the relay.
Relayed Relay(const std::vector<std::string>& chunks, const CaptureWants& wants, bool drop_usage, bool use_relay) {
  Relayed r;
  ChatAssembler assembled;
  for (const std::string& data : chunks) {
    if (use_relay && RelayContentChunk(data, wants, drop_usage, r.tokens, assembled, r.out)) {
      ++r.fast;
      continue;
    }
    auto chunk = CaptureAndStrip(data, wants, drop_usage, r.tokens);
    if (!chunk.ok() || chunk->is_error) {
      r.failed = true;
      break;
    }
    if (chunk->usage_only && drop_usage) continue;
    if (!assembled.AddContentDelta(chunk->text)) assembled.Add(forge::ParseJsonOrDiscarded(chunk->text));
    r.out += "data: " + chunk->text + "\n\n";
  }
  r.assembled = assembled.Result();
  r.assembled_text = forge::ParseJsonOrDiscarded(assembled.ResultText(nullptr));
  r.finish_reason = assembled.FinishReason();
  return r;
}

const char* kHead = R"("id":"chatcmpl-1","object":"chat.completion.chunk","created":1764892800,"model":"m")";

std::string Chunk(const std::string& choice, const std::string& extra = "") {
  return std::string("{") + kHead + extra + R"(,"choices":[)" + choice + "]}";
}

}  // namespace

TEST_CASE("stream relay: the common chunk relayed in one walk gives what the full way gives") {
  const std::string lp = R"("logprobs":{"content":[{"token":" a","logprob":-0.125,"bytes":[32,97],"top_logprobs":[]}]})";
  const std::vector<std::vector<std::string>> streams = {
      // vLLM's shape: prompt ids and the role first, then content with ids and logprobs, a finish, usage.
      {Chunk(R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null})",
             R"(,"prompt_token_ids":[1,2,3])"),
       Chunk(R"({"index":0,"delta":{"content":" a"},)" + lp + R"(,"finish_reason":null,"token_ids":[10]})"),
       Chunk(R"({"index":0,"delta":{"content":"\"q\" \u00e9\n\ud83d\ude00 é"},)" + lp + R"(,"finish_reason":null,"token_ids":[11,12]})"),
       Chunk(R"({"index":0,"delta":{"content":"b"},"logprobs":{"content":[]},"finish_reason":null,"token_ids":[]})"),
       Chunk(R"({"index":0,"delta":{"content":null},"logprobs":null,"finish_reason":null,"stop_reason":null})"),
       Chunk(R"({"index":0,"delta":{"content":"c"},)" + lp + R"(,"finish_reason":null,"token_ids":[13]})", R"(,"usage":null)"),
       Chunk(R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":null})"),
       Chunk("", R"(,"usage":{"prompt_tokens":3,"completion_tokens":4})")},
      // Without ids: the older token_id:N form; spacing; a second choice; odd members.
      {Chunk(R"({"index":0,"delta":{"role":"assistant"}})"),
       Chunk(R"({"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"token_id:42","logprob":-0.25}]}})"),
       std::string("{ ") + kHead + R"( , "choices" : [ { "index" : 0 , "delta" : { "content" : "y" } } ] })",
       Chunk(R"({"index":1,"delta":{"content":"second"},"token_ids":[5]})"),
       Chunk(R"({"index":0,"delta":{"content":"z"},"token_ids":[6]})", R"(,"system_fingerprint":"late")"),
       Chunk(R"({"index":0,"delta":{"content":"d","content":"e"}})"),
       Chunk(R"({"index":0,"delta":{"content":"f"},"logprobs":{"content":[{"logprob":-1}],"refusal":null}})"),
       Chunk(R"({"index":0,"delta":{"content":"g"},"logprobs":{"content":[{"logprob":-2}]}})"),
       Chunk(R"({"index":0,"delta":{"content":"h"},"unknown":1})"),
       Chunk(R"({"index":0,"delta":{"content":"i"}},{"index":1,"delta":{"content":"j"}})"),
       Chunk(R"({"index":0,"delta":{"content":"k"},"token_ids":[7]})", R"(,"extra":true)"),
       Chunk(R"({"index":0,"delta":{"content":"l"},"prompt_token_ids":[9]})"),
       Chunk(R"({"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}})"),
       Chunk(R"({"index":0,"delta":{"content":"m"},"token_ids":[8]})") + " ",
       Chunk(R"({"index":0,"delta":{"content":"n"},"finish_reason":"length"})")},
  };
  const std::vector<std::string> not_json = {
      Chunk(R"({"index":0,"delta":{"role":"assistant"}})"),
      Chunk(R"({"index":0,"delta":{"content":"o"}})"),
      Chunk(R"({"index":0,"delta":{"content":"bad \x01"}})"),
  };
  for (int mask = 0; mask < 8; ++mask) {
    CaptureWants wants;
    wants.token_ids = mask & 1;
    wants.logprobs = mask & 2;
    bool drop_usage = mask & 4;
    for (const auto& stream : streams) {
      CAPTURE(mask);
      CAPTURE(stream.front());
      Relayed full = Relay(stream, wants, drop_usage, false);
      Relayed fast = Relay(stream, wants, drop_usage, true);
      CHECK_FALSE(full.failed);
      CHECK_FALSE(fast.failed);
      CHECK(fast.out == full.out);
      CHECK(fast.tokens.prompt_ids == full.tokens.prompt_ids);
      CHECK(fast.tokens.completion_ids == full.tokens.completion_ids);
      CHECK(fast.tokens.logprobs == full.tokens.logprobs);
      CHECK(fast.assembled == full.assembled);
      // The record's text form (logprobs spliced as they came) is the same response.
      CHECK(fast.assembled_text == full.assembled);
      CHECK(full.assembled_text == full.assembled);
      CHECK(fast.finish_reason == full.assembled["choices"][0].value("finish_reason", Json("")));
      CHECK(fast.fast >= 4);  // the relay takes the common chunks
    }
    // A chunk that is not JSON is left to the full way, which refuses it.
    Relayed bad = Relay(not_json, wants, drop_usage, true);
    CHECK(bad.failed);
    CHECK(bad.fast == 1);
  }
  // The upstream's form: the given usage in place of the stream's own.
  ChatAssembler a;
  a.Add(Json::parse(Chunk(R"({"index":0,"delta":{"role":"assistant"}})")));
  ContentDelta piece;
  piece.content = R"("hi")";
  piece.logprobs_content = R"([{"token":"hi","logprob":-0.5}])";
  REQUIRE(a.AddContentDelta(piece));
  a.Add(Json::parse(Chunk("", R"(,"usage":{"prompt_tokens":1})")));
  Json usage = {{"prompt_tokens", 2}, {"completion_tokens", 1}};
  Json with_usage = Json::parse(a.ResultText(&usage));
  CHECK(with_usage["usage"] == usage);
  CHECK(a.ResultTexts(usage) == std::pair{a.ResultText(nullptr), a.ResultText(&usage)});
  CHECK(a.ResultTexts(Json()) == std::pair{a.ResultText(nullptr), a.ResultText(nullptr)});
  CHECK(Json::parse(a.ResultText(nullptr))["usage"]["prompt_tokens"] == 1);
  CHECK(with_usage["choices"][0]["logprobs"]["content"][0]["logprob"] == -0.5);
  CHECK(with_usage["choices"][0]["message"]["content"] == "hi");
  CHECK(a.FinishReason().empty());
  // Before the stream's first chunk the assembler has no head: the full way.
  ChatAssembler fresh;
  CapturedTokens tokens;
  std::string out;
  CHECK_FALSE(RelayContentChunk(Chunk(R"({"index":0,"delta":{"content":"a"}})"), CaptureWants{}, false, tokens, fresh,
                                out));
  CHECK(out.empty());
  CHECK(fresh.empty());
}

// The relay's one pass validates a chunk as it walks it: whatever it takes
// must be what the full way (CaptureAndStrip, which validates the whole text
// first) makes of it, and anything unusual it must leave to the full way.
namespace {

const std::string kFirst = Chunk(R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null})");

// Whether the relay takes data (after a first chunk), and that the stream's
// bytes, tokens and assembly are the full way's either way.
bool TakenAsFullWay(const std::string& data, const CaptureWants& wants, bool drop_usage) {
  Relayed full = Relay({kFirst, data}, wants, drop_usage, false);
  Relayed fast = Relay({kFirst, data}, wants, drop_usage, true);
  CHECK(fast.failed == full.failed);
  CHECK(fast.out == full.out);
  CHECK(fast.tokens.completion_ids == full.tokens.completion_ids);
  CHECK(fast.tokens.logprobs == full.tokens.logprobs);
  CHECK(fast.assembled == full.assembled);
  return fast.fast > 0;
}

std::string WithNul(std::string data) {  // the '~' a NUL byte
  data[data.find('~')] = '\0';
  return data;
}

std::string Nested(int levels) {  // levels arrays around a 0
  return std::string(static_cast<size_t>(levels), '[') + "0" + std::string(static_cast<size_t>(levels), ']');
}

}  // namespace

TEST_CASE("stream relay: the one pass takes the common chunk and leaves anything unusual to the full way") {
  CaptureWants none, all;
  all.token_ids = all.logprobs = true;
  const std::string lp = R"("logprobs":{"content":[{"token":"a","logprob":-0.5,"top_logprobs":[]}]})";
  // Taken: the shapes the pass reads itself, with spacing, escapes and UTF-8 in values.
  for (const std::string& data : {
           Chunk(R"({"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null})"),
           Chunk(R"({"index":0,"delta":{"content":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00 é"},"finish_reason":null})"),
           Chunk(R"({"index":-0,"delta":{},"stop_reason":null,"token_ids":[1,-2,3e0]})"),
           Chunk(R"({"index":2147483647,"delta":{"content":null}})"),
           Chunk(R"({"index":0,"delta":{"content":"b"},)" + lp + R"(,"token_ids":[7]})", R"(,"usage":null)"),
           std::string("{ \"id\" : [\"x\",{\"y\":null}] ,\t\"created\":1e308,\n\"choices\" : [ {\"delta\" :"
                       " { \"content\" : \"c\" } , \"index\" : 0 } ] , \"model\":\"m\" }"),
       }) {
    CAPTURE(data);
    CHECK(TakenAsFullWay(data, none, false));
    CHECK(TakenAsFullWay(data, all, true));
  }
  // Left to the full way (which refuses what is not JSON, and takes the rest as it always did).
  for (const std::string& data : {
           // duplicates, at each level the pass reads
           Chunk(R"({"index":0,"delta":{"content":"a"}})", R"(,"id":"again")"),
           Chunk(R"({"index":0,"index":0,"delta":{"content":"a"}})"),
           Chunk(R"({"index":0,"delta":{"content":"a"},"delta":{"content":"b"}})"),
           Chunk(R"({"index":0,"delta":{"content":"a","content":"b"}})"),
           // escapes in keys: "id", "index", "content" spelled with \u
           std::string("{\"\\u0069d\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
                       "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}"),
           Chunk(R"({"\u0069ndex":0,"delta":{"content":"a"}})"),
           Chunk(R"({"index":0,"delta":{"con\u0074ent":"a"}})"),
           Chunk(R"({"index":0,"delta":{"content":"a"}})", R"(,"\"":1)"),
           // an escape in "object", a text completion's object
           Chunk(R"({"index":0,"delta":{"content":"a"}})", R"(,"object":"chat\u002ecompletion")"),
           // nesting where the pass expects none, and two choices
           Chunk(R"({"index":0,"delta":{"content":["a"]}})"),
           Chunk(R"({"index":0,"delta":{"content":{"text":"a"}}})"),
           Chunk(R"([{"index":0,"delta":{"content":"a"}}])"),
           Chunk(R"({"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}})"),
           Chunk(R"({"index":0,"delta":{"content":"a"},"token_ids":{"0":1}})"),
           Chunk(R"({"index":0,"delta":{"content":"a"},"logprobs":[]})"),
           // NUL bytes: in a value, after the object
           WithNul(Chunk(R"({"index":0,"delta":{"content":"a~b"}})")),
           Chunk(R"({"index":0,"delta":{"content":"a"}})") + std::string("\0}", 2),
           // truncated, or with text after the object
           Chunk(R"({"index":0,"delta":{"content":"a"}})").substr(0, 80) + "}",
           Chunk(R"({"index":0,"delta":{"content":"a"}})") + "}",
           Chunk(R"({"index":0,"delta":{"content":"a"}})") + " {}",
           Chunk(R"({"index":0,"delta":{"content":"a)"),
           // numbers: out of int32, not integers, not JSON, overflowing
           Chunk(R"({"index":2147483648,"delta":{"content":"a"}})"),
           Chunk(R"({"index":-2147483649,"delta":{"content":"a"}})"),
           Chunk(R"({"index":99999999999999999999,"delta":{"content":"a"}})"),
           Chunk(R"({"index":0.0,"delta":{"content":"a"}})"),
           Chunk(R"({"index":1e0,"delta":{"content":"a"}})"),
           Chunk(R"({"index":01,"delta":{"content":"a"}})"),
           Chunk(R"({"index":-,"delta":{"content":"a"}})"),
           Chunk(R"({"index":0,"delta":{"content":"a"},"token_ids":[1,02]})"),
           Chunk(R"({"index":0,"delta":{"content":"a"}})", R"(,"system_fingerprint":1e400)"),
           // literals and strings that are not JSON
           Chunk(R"({"index":0,"delta":{"content":nul}})"),
           Chunk(R"({"index":0,"delta":{"content":"a"},"finish_reason":nullx})"),
           Chunk(R"({"index":0,"delta":{"content":"\x"}})"),
           Chunk(R"({"index":0,"delta":{"content":"\ud83d"}})"),
           Chunk("{\"index\":0,\"delta\":{\"content\":\"\xC3\x28\"}}"),
           Chunk("{\"index\":0,\"delta\":{\"content\":\"tab\there\"}}"),
           // what a content chunk does not have
           Chunk(R"({"index":0,"delta":{"content":"a"},"finish_reason":"stop"})"),
           Chunk(R"({"index":0,"delta":{"role":"assistant","content":"a"}})"),
           Chunk(R"({"index":0,"delta":{"content":"a"}})", R"(,"usage":{"prompt_tokens":1})"),
           Chunk(R"({"delta":{"content":"a"},"index":0,"extra":1})"),
           Chunk(R"({"index":0})"),
           Chunk(R"({})"),
           std::string(R"({"choices":[]})"),
       }) {
    CAPTURE(data);
    CHECK_FALSE(TakenAsFullWay(data, none, false));
    CHECK_FALSE(TakenAsFullWay(data, all, true));
  }
  // The depth limit of a value inside is the chunk's: 4096 levels in all
  // (the chunk, "choices", the choice and the value's own), not one more.
  for (int levels : {4096, 4097}) {
    // chunk, choices, choice, logprobs, content, its element, then arrays
    std::string data = Chunk(R"({"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"x":)" + Nested(levels - 6) +
                             R"(}]}})");
    // chunk, choices, choice, then arrays
    std::string ids = Chunk(R"({"index":0,"delta":{"content":"a"},"token_ids":)" + Nested(levels - 3) + "}");
    // chunk, then arrays
    std::string head = R"({"id":)" + Nested(levels - 1) +
                       R"(,"object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{}}]})";
    CAPTURE(levels);
    CHECK(TakenAsFullWay(data, all, false) == (levels == 4096));
    CHECK(TakenAsFullWay(data, none, false) == (levels == 4096));
    CHECK(TakenAsFullWay(ids, none, false) == (levels == 4096));
    CHECK(TakenAsFullWay(head, none, false) == (levels == 4096));
  }
}

TEST_CASE("stream relay: every one-byte change of a content chunk is taken only as the full way takes it") {
  const std::string base = Chunk(
      R"({"index":0,"delta":{"content":"a \"b\" é\u00e9"},"logprobs":{"content":[{"token":"a","logprob":-0.5}]},"finish_reason":null,"token_ids":[12,345]})",
      R"(,"usage":null)");
  CaptureWants none, all;
  all.token_ids = all.logprobs = true;
  const std::string bytes = std::string("\"\\{}[],: 0-e.xnu\x01\xC3\xFF", 21) + std::string(1, '\0');
  REQUIRE(TakenAsFullWay(base, all, false));
  REQUIRE(TakenAsFullWay(base, none, true));
  int taken = 0, tried = 0;
  auto check = [&](const std::string& data) {
    ++tried;
    bool a = TakenAsFullWay(data, all, false);
    bool b = TakenAsFullWay(data, none, true);
    taken += a + b;
  };
  for (size_t i = 0; i < base.size(); ++i) {
    CAPTURE(i);
    check(base.substr(0, i) + base.substr(i + 1));  // a byte gone
    for (char c : bytes) {
      check(base.substr(0, i) + c + base.substr(i + 1));  // a byte changed
      check(base.substr(0, i) + c + base.substr(i));      // a byte added
    }
  }
  CHECK(tried > 10000);
  CHECK(taken > 1000);  // (content and values change without changing the shape)
}

}  // namespace proxy_stream_relay_test
