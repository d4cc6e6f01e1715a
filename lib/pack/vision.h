// How a vision-language model's processor turns an image into placeholder
// tokens, as forge-pack needs it to check a recorded prompt: the Qwen-VL
// families (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) resize an image to multiples of
// patch_size x merge_size (transformers' smart_resize, image_processing_
// qwen2_vl.py) and give one <|image_pad|> per merge_size x merge_size
// patches, between <|vision_start|> and <|vision_end|>.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::pack {

struct ProcessorSpec {
  std::string family;  // qwen2-vl, qwen2.5-vl, qwen3-vl
  int64_t patch_size = 14;
  int64_t merge_size = 2;
  int64_t temporal_patch_size = 2;
  int64_t min_pixels = 56 * 56;
  int64_t max_pixels = 14 * 14 * 4 * 16384;
  int32_t image_token_id = 151655;   // <|image_pad|>
  int32_t vision_start_id = 151652;  // <|vision_start|>
  int32_t vision_end_id = 151653;    // <|vision_end|>

  nlohmann::json ToJson() const;
};

// "FAMILY[,key=value...]" (keys as in ToJson: patch_size, merge_size,
// min_pixels, max_pixels, image_token_id, ...), or a JSON object's text, or
// the path of a file holding one (what forge-pack writes in its metadata).
// The family sets the defaults its model repositories' preprocessor_config.json give.
Result<ProcessorSpec> ParseProcessorSpec(std::string_view text);

// An image as the processor sees it.
struct ProcessedSize {
  int64_t height = 0, width = 0;  // after smart_resize
  int64_t grid_t = 1, grid_h = 0, grid_w = 0;  // image_grid_thw
  int64_t tokens = 0;  // placeholder tokens: grid_h * grid_w / merge_size^2
};
// transformers' smart_resize (Python's round: half to even), then the grid.
// InvalidData for an aspect ratio over 200, as the processor refuses one.
Result<ProcessedSize> Process(const ProcessorSpec& spec, int64_t height, int64_t width);

struct Placeholder {
  size_t offset = 0, length = 0;  // into the prompt ids
};

// [[offset, length]...], as forge-pack writes them.
nlohmann::json PlaceholdersJson(std::span<const Placeholder> ranges);

// Where each image's placeholder tokens are in a prompt: the runs of
// image_token_id, in order, each between vision_start_id and vision_end_id;
// there must be exactly one run per image, of exactly its expected length.
// The error says what does not match (forge-pack's drop reason is
// image_tokens_mismatch).
Result<std::vector<Placeholder>> LocatePlaceholders(std::span<const int32_t> prompt,
                                                    std::span<const int64_t> expected, const ProcessorSpec& spec);
// The same check on what the server said (vLLM's mm_placeholders JSON text):
// one range per image, in order, each of the expected length, inside the
// prompt, every id in it image_token_id.
Result<std::vector<Placeholder>> CheckServerPlaceholders(std::string_view mm_placeholders,
                                                         std::span<const int32_t> prompt,
                                                         std::span<const int64_t> expected, const ProcessorSpec& spec);

}  // namespace forge::pack
