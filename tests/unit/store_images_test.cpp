// Images in requests: each stored once by content, whatever the wire format
// carries it in and however many later requests resend it (#56).
#include <doctest/doctest.h>

#include "base/base64.h"
#include "base/hash.h"
#include "base/image_info.h"
#include "store/inline_images.h"
#include "store/store.h"
#include "support/open_store.h"
#include "support/temp_dir.h"

using forge::store::CallRecord;
using forge::store::Json;
using forge::testing::OpenOrDie;

namespace {

// A PNG's signature and IHDR (all a reader of its size needs), then `size`
// bytes zstd cannot shrink, different for each seed.
std::string FakePng(uint32_t width, uint32_t height, size_t size, uint32_t seed) {
  std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16);
  for (uint32_t v : {width, height}) {
    for (int shift = 24; shift >= 0; shift -= 8) png += static_cast<char>((v >> shift) & 0xFF);
  }
  png += std::string("\x08\x02\0\0\0", 5);
  for (uint32_t x = seed * 2654435761u + 7; png.size() < size; x = x * 1103515245u + 12345u) {
    png += static_cast<char>(x >> 16);
  }
  return png;
}

Json ChatImage(const std::string& png) {
  return {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + forge::Base64Encode(png)}}}};
}

Json AnthropicImage(const std::string& png) {
  return {{"type", "image"},
          {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", forge::Base64Encode(png)}}}};
}

CallRecord Call(const std::string& format, Json request, std::vector<int32_t> prompt) {
  CallRecord c;
  c.rollout_id = "r";
  c.client_format = format;
  c.model = "m";
  c.request = std::move(request);
  c.response = {{"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", "ok"}}}}})}};
  c.prompt_ids = std::move(prompt);
  c.completion_ids = {7};
  c.logprobs = {-0.5f};
  c.http_status = 200;
  return c;
}

}  // namespace

TEST_CASE("an image resent in every later request is stored once: bytes grow with distinct images, not images x turns") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  constexpr int kTurns = 30, kEvery = 3;
  constexpr size_t kImageBytes = 40000;
  Json messages = Json::array({{{"role", "system"}, {"content", "operate the desktop"}}});
  std::vector<std::string> digests;  // of every image sent so far, in order
  std::vector<int32_t> prompt;
  for (int turn = 0; turn < kTurns; ++turn) {
    Json content = Json::array({{{"type", "text"}, {"text", "turn " + std::to_string(turn)}}});
    if (turn % kEvery == 0) {
      std::string png = FakePng(1280, 800, kImageBytes, turn);
      content.push_back(ChatImage(png));
      digests.push_back(forge::Sha256Hex(png));
    }
    messages.push_back({{"role", "user"}, {"content", content}});
    prompt.push_back(turn);
    std::vector<CallRecord> calls = {Call("openai-chat", {{"model", "m"}, {"messages", messages}}, prompt)};
    REQUIRE(store->calls().AppendCalls(calls).ok());
    messages.push_back({{"role", "assistant"}, {"content", "ok " + std::to_string(turn)}});
  }
  auto stats = store->Stats();
  REQUIRE(stats.ok());
  const size_t distinct = kTurns / kEvery;
  // 10 images of 40 KB each and small text parts; 30 turns resending them would be ~165 images.
  CHECK(stats->blob_bytes > distinct * kImageBytes);
  CHECK(stats->blob_bytes < distinct * kImageBytes + 20000);

  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  REQUIRE(back->size() == kTurns);
  // Exact bytes: the request reads back as it was sent, base64 and all.
  Json sent = messages;
  sent.erase(sent.size() - 1);  // the last assistant message came after the last call
  CHECK(back->back().request["messages"] == sent);
  // Each call names the images it sent, in order, by SHA-256.
  CHECK(back->front().images == std::vector<std::string>{digests.front()});
  CHECK(back->back().images == digests);
  CHECK((*back)[4].images.size() == 2);
  // And a digest gives the image's file.
  auto bytes = store->blobs().BlobByHash(digests[3]);
  REQUIRE(bytes.ok());
  CHECK(forge::Sha256Hex(*bytes) == digests[3]);
  CHECK(forge::ReadImageInfo(*bytes)->width == 1280);
}

TEST_CASE("an Anthropic image block translated to a chat image_url stores the image once, named by both requests") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  std::string png = FakePng(640, 400, 30000, 1);
  std::string b64 = forge::Base64Encode(png);
  Json messages = Json::array();
  for (int turn = 0; turn < 5; ++turn) {
    Json blocks = Json::array({{{"type", "text"}, {"text", "look " + std::to_string(turn)}}});
    if (turn == 0) blocks.push_back(AnthropicImage(png));
    messages.push_back({{"role", "user"}, {"content", blocks}});
    CallRecord c = Call("anthropic", {{"model", "m"}, {"max_tokens", 64}, {"messages", messages}}, {1, 2, turn});
    Json chat = Json::array();
    for (const Json& m : messages) {
      Json parts = Json::array();
      for (const Json& b : m["content"]) {
        parts.push_back(b["type"] == "image" ? ChatImage(png) : b);
      }
      chat.push_back({{"role", m["role"]}, {"content", parts}});
    }
    c.upstream_request = {{"model", "m"}, {"max_tokens", 64}, {"messages", chat}, {"return_token_ids", true}};
    c.mm_placeholders = R"({"image":[{"offset":1,"length":4}]})";
    std::vector<CallRecord> calls = {c};
    REQUIRE(store->calls().AppendCalls(calls).ok());
    messages.push_back({{"role", "assistant"}, {"content", Json::array({{{"type", "text"}, {"text", "ok"}}})}});
  }
  auto stats = store->Stats();
  REQUIRE(stats.ok());
  CHECK(stats->blob_bytes > png.size());
  CHECK(stats->blob_bytes < 2 * png.size());
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  REQUIRE(back->size() == 5);
  for (const CallRecord& c : *back) {
    CHECK(c.images == std::vector<std::string>{forge::Sha256Hex(png)});
    CHECK(c.mm_placeholders == R"({"image":[{"offset":1,"length":4}]})");
  }
  CHECK(back->back().upstream_request["messages"][0]["content"][1]["image_url"]["url"] ==
        "data:image/png;base64," + b64);
  CHECK(back->back().request["messages"][0]["content"][1]["source"]["data"] == b64);
}

TEST_CASE("inline images: only canonical base64 of a real image header is taken out; anything else stays text") {
  using forge::store::FindInlineImages;
  std::string png = FakePng(32, 16, 300, 2);
  std::string b64 = forge::Base64Encode(png);
  std::string text = R"({"a":"data:image/png;base64,)" + b64 + R"(","b":")" + b64 + R"("})";
  auto found = FindInlineImages(text);
  REQUIRE(found.size() == 2);
  CHECK(found[0].bytes == png);
  CHECK(text.substr(found[1].begin, found[1].end - found[1].begin) == b64);
  // Cut short (not a multiple of 4), broken by an escaped line break, or not an image: left alone.
  CHECK(FindInlineImages(R"({"a":")" + b64.substr(0, b64.size() - 1) + R"("})").empty());
  CHECK(FindInlineImages(R"({"a":")" + b64.substr(0, 40) + "\\n" + b64.substr(40) + R"("})").empty());
  std::string not_png = png;
  not_png[12] = 'X';  // no IHDR
  CHECK(FindInlineImages(R"({"a":")" + forge::Base64Encode(not_png) + R"("})").empty());
  // Such text still round-trips through a store exactly.
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  Json odd = {{"model", "m"},
              {"messages", Json::array({{{"role", "user"},
                                         {"content", "iVBORw0KGgo" + std::string(200, 'A') + "\n" + b64}}})}};
  std::vector<CallRecord> calls = {Call("openai-chat", odd, {1})};
  REQUIRE(store->calls().AppendCalls(calls).ok());
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  CHECK(back->front().request == odd);
  CHECK(back->front().images.empty());
}
