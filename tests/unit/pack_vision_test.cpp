// The Qwen-VL resize rule and the placeholder checks forge-pack applies to
// a VL sample (#56). Expected sizes are transformers' smart_resize's
// (image_processing_qwen2_vl.py) for the same inputs, worked by hand.
#include <doctest/doctest.h>

#include "pack/vision.h"


namespace {

forge::pack::ProcessorSpec ParsedSpec(const std::string& text) {
  auto spec = forge::pack::ParseProcessorSpec(text);
  REQUIRE_MESSAGE(spec.ok(), spec.status().message());
  return *spec;
}

// <|vision_start|>, n x <|image_pad|>, <|vision_end|> after some text ids.
void AddImage(std::vector<int32_t>& ids, const forge::pack::ProcessorSpec& s, int64_t n) {
  ids.push_back(s.vision_start_id);
  ids.insert(ids.end(), static_cast<size_t>(n), s.image_token_id);
  ids.push_back(s.vision_end_id);
}

}  // namespace

TEST_CASE("smart_resize: rounded to multiples of patch x merge, scaled down past max_pixels and up below min_pixels") {
  forge::pack::ProcessorSpec qwen2 = ParsedSpec("qwen2-vl");
  CHECK(qwen2.patch_size == 14);
  CHECK(qwen2.max_pixels == 12845056);
  auto a = forge::pack::Process(qwen2, 800, 1280);  // 800/28 = 28.57 -> 29; 1280/28 = 45.71 -> 46
  REQUIRE(a.ok());
  CHECK(a->height == 812);
  CHECK(a->width == 1288);
  CHECK(a->grid_h == 58);
  CHECK(a->grid_w == 92);
  CHECK(a->tokens == 58 * 92 / 4);
  // max_pixels 1003520 (vLLM deployments' common cap): beta = sqrt(1024000 / 1003520).
  auto b = forge::pack::Process(ParsedSpec("qwen2-vl,max_pixels=1003520"), 800, 1280);
  REQUIRE(b.ok());
  CHECK(b->height == 784);
  CHECK(b->width == 1260);
  CHECK(b->tokens == 1260);
  // Below min_pixels: scaled up, ceil'd.
  auto c = forge::pack::Process(qwen2, 20, 30);
  REQUIRE(c.ok());
  CHECK(c->height * c->width >= qwen2.min_pixels);
  CHECK(c->height % 28 == 0);
  // Halves round to even, as Python's round: 70/28 = 2.5 -> 2.
  auto d = forge::pack::Process(qwen2, 70, 280);
  REQUIRE(d.ok());
  CHECK(d->height == 56);
  // Qwen3-VL: patch 16.
  auto e = forge::pack::Process(ParsedSpec("qwen3-vl"), 800, 1280);
  REQUIRE(e.ok());
  CHECK(e->height % 32 == 0);
  CHECK(e->width == 1280);
  // An aspect ratio over 200 is refused, as the processor refuses it.
  CHECK_FALSE(forge::pack::Process(qwen2, 10, 2100).ok());
}

TEST_CASE("processor descriptions: family defaults, key=value overrides, JSON; bad ones named") {
  CHECK(ParsedSpec("qwen2.5-vl,image_token_id=7").image_token_id == 7);
  CHECK(ParsedSpec(R"({"family": "qwen3-vl", "merge_size": 2})").patch_size == 16);
  CHECK(ParsedSpec(ParsedSpec("qwen2-vl,max_pixels=1003520").ToJson().dump()).max_pixels == 1003520);
  for (const char* bad : {"llava", "qwen2-vl,patch=14", "qwen2-vl,max_pixels=x", "qwen2-vl,min_pixels=10,max_pixels=5",
                          "{\"patch_size\": 14}"}) {
    CAPTURE(bad);
    auto spec = forge::pack::ParseProcessorSpec(bad);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.status().message().find("--processor") != std::string::npos);
  }
}

TEST_CASE("placeholders: one run per image of its length between vision start and end, else the mismatch named") {
  forge::pack::ProcessorSpec s = ParsedSpec("qwen2-vl");
  std::vector<int32_t> ids = {1, 2, 3};
  AddImage(ids, s, 4);
  ids.push_back(9);
  AddImage(ids, s, 6);
  ids.push_back(10);
  std::vector<int64_t> expected = {4, 6};
  auto found = forge::pack::LocatePlaceholders(ids, expected, s);
  REQUIRE(found.ok());
  REQUIRE(found->size() == 2);
  CHECK((*found)[0].offset == 4);
  CHECK((*found)[1].offset == 11);  // 4 pads, end, 9, start
  CHECK(forge::pack::PlaceholdersJson(*found).dump() == "[[4,4],[11,6]]");

  std::vector<int64_t> wrong = {4, 5};
  auto short_run = forge::pack::LocatePlaceholders(ids, wrong, s);
  REQUIRE_FALSE(short_run.ok());
  CHECK(short_run.status().message().find("image 1 has 6 placeholder tokens") != std::string::npos);
  std::vector<int64_t> one = {4};
  CHECK_FALSE(forge::pack::LocatePlaceholders(ids, one, s).ok());
  std::vector<int64_t> three = {4, 6, 2};
  CHECK_FALSE(forge::pack::LocatePlaceholders(ids, three, s).ok());
  std::vector<int32_t> bare = {1, s.image_token_id, s.image_token_id, 2};  // no vision start / end
  std::vector<int64_t> two = {2};
  CHECK_FALSE(forge::pack::LocatePlaceholders(bare, two, s).ok());

  // The server's ranges (vLLM's mm_placeholders), checked against the ids.
  auto server = forge::pack::CheckServerPlaceholders(R"({"image":[{"offset":4,"length":4},{"offset":11,"length":6}]})",
                                                     ids, expected, s);
  REQUIRE(server.ok());
  CHECK(server->size() == 2);
  CHECK_FALSE(forge::pack::CheckServerPlaceholders(R"({"image":[{"offset":3,"length":4},{"offset":11,"length":6}]})",
                                                   ids, expected, s).ok());
  CHECK_FALSE(forge::pack::CheckServerPlaceholders(R"({"image":[{"offset":4,"length":4}]})", ids, expected, s).ok());
  CHECK_FALSE(forge::pack::CheckServerPlaceholders("not json", ids, expected, s).ok());
}
