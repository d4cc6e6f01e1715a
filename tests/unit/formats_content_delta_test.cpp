// The content-delta path of the translating formats: a chunk that is only a
// piece of content is answered from its text (ContentDeltaText +
// StreamTranslator::OnContentDelta) instead of its document; the bytes the
// client gets and the assembled response must be those of OnChunk.
#include <doctest/doctest.h>

#include <memory>

#include "proxy/formats/anthropic.h"
#include "proxy/formats/gemini.h"
#include "proxy/formats/responses.h"
#include "proxy/pass_through.h"
#include "support/chat_script.h"

using forge::proxy::AnthropicFormat;
using forge::proxy::ClientFormat;
using forge::proxy::ContentDeltaText;
using forge::proxy::Json;
using namespace forge::testing;

TEST_CASE("content delta: only a lone piece of content is one") {
  CHECK(ContentDeltaText(Chunk({{"content", "Hello \"x\"\n"}}).dump()) == "Hello \"x\"\n");
  CHECK(ContentDeltaText(Chunk({{"content", ""}}).dump()) == "");
  Json with_null_logprobs = Chunk({{"content", "a"}});
  with_null_logprobs["choices"][0]["logprobs"] = nullptr;
  with_null_logprobs["usage"] = nullptr;
  CHECK(ContentDeltaText(with_null_logprobs.dump()) == "a");

  std::vector<Json> not_one = {
      Chunk({{"role", "assistant"}, {"content", ""}}),   // the role: the first chunk
      Chunk({{"reasoning_content", "hm"}}),
      Chunk({{"content", "a"}}, "stop"),                  // a finish
      Chunk(ToolDelta(0, {{"function", {{"arguments", "{"}}}})),
      Chunk({{"content", nullptr}}),
      Chunk({{"content", "a"}, {"refusal", nullptr}}),
  };
  Json logprobs = Chunk({{"content", "a"}});
  logprobs["choices"][0]["logprobs"] = {{"content", Json::array()}};
  not_one.push_back(logprobs);
  Json usage = Chunk({{"content", "a"}});
  usage["usage"] = {{"prompt_tokens", 1}};
  not_one.push_back(usage);
  Json second_choice = Chunk({{"content", "a"}});
  second_choice["choices"][0]["index"] = 1;
  not_one.push_back(second_choice);
  Json two = Chunk({{"content", "a"}});
  two["choices"].push_back(two["choices"][0]);
  not_one.push_back(two);
  Json ids = Chunk({{"content", "a"}});
  ids["prompt_token_ids"] = {1, 2};
  not_one.push_back(ids);
  Json completion = Chunk({{"content", "a"}});
  completion["object"] = "text_completion";
  not_one.push_back(completion);
  for (const Json& chunk : not_one) {
    CAPTURE(chunk.dump());
    CHECK_FALSE(ContentDeltaText(chunk.dump()).has_value());
  }
}

namespace {

// The scripted stream with more content pieces, some needing escapes.
std::vector<Json> Script() {
  std::vector<Json> chunks = ScriptedChunks();
  chunks.insert(chunks.begin() + 4, Chunk({{"content", " \"quoted\"\\ \n\t\x01 é 😀"}}));
  chunks.insert(chunks.begin() + 5, Chunk({{"content", ""}}));
  chunks.insert(chunks.begin() + 1, Chunk({{"content", "before the reasoning"}}));
  return chunks;
}

void ExpectSameAsOnChunk(ClientFormat& format) {
  auto slow = format.NewStream();
  auto fast = format.NewStream();
  std::string slow_bytes, fast_bytes;
  int taken = 0;
  for (const Json& chunk : Script()) {
    slow_bytes += slow->OnChunk(chunk);
    auto content = ContentDeltaText(chunk.dump());
    std::string out;
    if (content && fast->OnContentDelta(*content, out)) {
      ++taken;
      fast_bytes += out;
    } else {
      fast_bytes += fast->OnChunk(chunk);
    }
  }
  slow_bytes += slow->OnEnd();
  fast_bytes += fast->OnEnd();
  CHECK(taken == 5);  // every lone content piece after the first chunk
  CHECK(fast_bytes == slow_bytes);
  CHECK(fast->Assembled() == slow->Assembled());
}

}  // namespace

TEST_CASE("content delta: Anthropic's bytes and assembled message are OnChunk's") {
  AnthropicFormat format;
  ExpectSameAsOnChunk(format);
}

TEST_CASE("content delta: Responses' bytes and assembled response are OnChunk's") {
  forge::proxy::ResponsesFormat format;
  ExpectSameAsOnChunk(format);
}

TEST_CASE("content delta: Gemini's bytes and assembled response are OnChunk's, SSE and JSON array") {
  for (bool sse : {true, false}) {
    CAPTURE(sse);
    forge::proxy::GeminiFormat format;
    forge::proxy::GeminiRoute route{"m", "streamGenerateContent", true, sse};
    Json request = {{"contents", {{{"role", "user"}, {"parts", {{{"text", "hi"}}}}}}}};
    REQUIRE(format.ToChat(route, request).ok());
    ExpectSameAsOnChunk(format);
  }
}

TEST_CASE("content delta: a translator not started yet leaves the chunk to OnChunk") {
  AnthropicFormat format;
  auto stream = format.NewStream();
  std::string out;
  CHECK_FALSE(stream->OnContentDelta("a", out));
  CHECK(out.empty());
}
