#include "pack/vision.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace forge::pack {

using Json = nlohmann::json;

namespace {

// The families' defaults: their model repositories' preprocessor_config.json
// (Qwen2-VL and Qwen2.5-VL: min_pixels 3136, max_pixels 12845056, patch 14;
// Qwen3-VL: size.shortest_edge 65536, size.longest_edge 16777216, patch 16),
// merge 2 and the tokenizer's vision ids for all three.
Result<ProcessorSpec> Family(std::string_view name) {
  ProcessorSpec spec;
  spec.family = std::string(name);
  if (name == "qwen2-vl" || name == "qwen2.5-vl") {
    spec.patch_size = 14;
    spec.min_pixels = 3136;
    spec.max_pixels = 12845056;
  } else if (name == "qwen3-vl") {
    spec.patch_size = 16;
    spec.min_pixels = 65536;
    spec.max_pixels = 16777216;
  } else {
    return Status::InvalidArgument(fmt::format("--processor: unknown family \"{}\" (qwen2-vl, qwen2.5-vl, qwen3-vl)", name));
  }
  return spec;
}

// Every field but the family, by its name in ToJson, as an integer.
struct IntField {
  const char* name;
  int64_t ProcessorSpec::*wide;
  int32_t ProcessorSpec::*narrow;
};
constexpr IntField kFields[] = {
    {"patch_size", &ProcessorSpec::patch_size, nullptr},
    {"merge_size", &ProcessorSpec::merge_size, nullptr},
    {"temporal_patch_size", &ProcessorSpec::temporal_patch_size, nullptr},
    {"min_pixels", &ProcessorSpec::min_pixels, nullptr},
    {"max_pixels", &ProcessorSpec::max_pixels, nullptr},
    {"image_token_id", nullptr, &ProcessorSpec::image_token_id},
    {"vision_start_id", nullptr, &ProcessorSpec::vision_start_id},
    {"vision_end_id", nullptr, &ProcessorSpec::vision_end_id},
};

Status SetField(ProcessorSpec& spec, std::string_view key, int64_t value) {
  for (const IntField& f : kFields) {
    if (key != f.name) continue;
    if (f.wide) spec.*f.wide = value;
    else spec.*f.narrow = static_cast<int32_t>(value);
    return Status::Ok();
  }
  return Status::InvalidArgument(fmt::format("--processor: unknown key \"{}\"", key));
}

Status Valid(const ProcessorSpec& s) {
  if (s.patch_size < 1 || s.merge_size < 1 || s.temporal_patch_size < 1 || s.min_pixels < 0 ||
      s.max_pixels < s.min_pixels) {
    return Status::InvalidArgument("--processor: patch_size, merge_size, temporal_patch_size must be positive and "
                                   "0 <= min_pixels <= max_pixels");
  }
  return Status::Ok();
}

Result<ProcessorSpec> FromJson(const Json& j) {
  if (!j.is_object() || !j.contains("family") || !j["family"].is_string()) {
    return Status::InvalidArgument("--processor: a JSON description needs a \"family\" string");
  }
  auto spec = Family(j["family"].get<std::string>());
  if (!spec.ok()) return spec;
  for (const auto& [key, value] : j.items()) {
    if (key == "family") continue;
    if (!value.is_number_integer()) return Status::InvalidArgument("--processor: " + key + " must be an integer");
    FORGE_RETURN_IF_ERROR(SetField(*spec, key, value.get<int64_t>()));
  }
  FORGE_RETURN_IF_ERROR(Valid(*spec));
  return spec;
}

// Python's round(): to the nearest integer, halves to even (the default
// rounding mode's nearbyint).
int64_t RoundHalfEven(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

}  // namespace

Json ProcessorSpec::ToJson() const {
  Json j = {{"family", family}};
  for (const IntField& f : kFields) j[f.name] = f.wide ? this->*f.wide : int64_t{this->*f.narrow};
  return j;
}

Result<ProcessorSpec> ParseProcessorSpec(std::string_view text) {
  if (!text.empty() && text.front() == '{') {
    Json j = Json::parse(text, nullptr, false);
    if (j.is_discarded()) return Status::InvalidArgument("--processor: not valid JSON");
    return FromJson(j);
  }
  if (std::ifstream file{std::string(text)}) {
    std::stringstream buffer;
    buffer << file.rdbuf();
    Json j = Json::parse(buffer.str(), nullptr, false);
    if (j.is_discarded()) return Status::InvalidArgument(fmt::format("--processor: {} is not JSON", text));
    if (j.contains("processor")) j = j["processor"];  // forge-pack's own metadata file
    return FromJson(j);
  }
  size_t comma = text.find(',');
  auto spec = Family(text.substr(0, comma));
  if (!spec.ok()) return spec;
  while (comma != std::string_view::npos) {
    text.remove_prefix(comma + 1);
    comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Status::InvalidArgument(fmt::format("--processor: \"{}\" is not key=value", item));
    std::string value(item.substr(eq + 1));
    char* end = nullptr;
    long long number = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') return Status::InvalidArgument(fmt::format("--processor: \"{}\" is not an integer", item));
    FORGE_RETURN_IF_ERROR(SetField(*spec, item.substr(0, eq), number));
  }
  FORGE_RETURN_IF_ERROR(Valid(*spec));
  return spec;
}

Result<ProcessedSize> Process(const ProcessorSpec& spec, int64_t height, int64_t width) {
  if (height <= 0 || width <= 0) return Status::InvalidData("image has no size");
  if (static_cast<double>(std::max(height, width)) / static_cast<double>(std::min(height, width)) > 200) {
    return Status::InvalidData(fmt::format("absolute aspect ratio must be smaller than 200, got {}x{}", width, height));
  }
  const int64_t factor = spec.patch_size * spec.merge_size;
  const double h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
  int64_t h_bar = RoundHalfEven(h / f) * factor;
  int64_t w_bar = RoundHalfEven(w / f) * factor;
  if (spec.max_pixels && h_bar * w_bar > spec.max_pixels) {
    double beta = std::sqrt(static_cast<double>(height * width) / static_cast<double>(spec.max_pixels));
    h_bar = std::max(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (spec.min_pixels && h_bar * w_bar < spec.min_pixels) {
    double beta = std::sqrt(static_cast<double>(spec.min_pixels) / static_cast<double>(height * width));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  if (h_bar <= 0 || w_bar <= 0) return Status::InvalidData(fmt::format("image {}x{} resizes to nothing", width, height));
  ProcessedSize out;
  out.height = h_bar;
  out.width = w_bar;
  out.grid_h = h_bar / spec.patch_size;
  out.grid_w = w_bar / spec.patch_size;
  out.tokens = out.grid_t * out.grid_h * out.grid_w / (spec.merge_size * spec.merge_size);
  return out;
}

Json PlaceholdersJson(std::span<const Placeholder> ranges) {
  Json out = Json::array();
  for (const Placeholder& r : ranges) out.push_back({r.offset, r.length});
  return out;
}

Result<std::vector<Placeholder>> LocatePlaceholders(std::span<const int32_t> prompt, std::span<const int64_t> expected,
                                                    const ProcessorSpec& spec) {
  std::vector<Placeholder> found;
  for (size_t i = 0; i < prompt.size();) {
    if (prompt[i] != spec.image_token_id) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < prompt.size() && prompt[end] == spec.image_token_id) ++end;
    size_t k = found.size();
    if (k >= expected.size()) {
      return Status::InvalidData(fmt::format("the prompt has more image placeholder runs than its {} image(s)", expected.size()));
    }
    if (end - i != static_cast<size_t>(expected[k])) {
      return Status::InvalidData(fmt::format("image {} has {} placeholder tokens at {}, its size gives {}", k, end - i, i,
                                             expected[k]));
    }
    if (i == 0 || prompt[i - 1] != spec.vision_start_id || end == prompt.size() || prompt[end] != spec.vision_end_id) {
      return Status::InvalidData(fmt::format("image {}'s placeholder tokens at {} are not between vision start and end", k, i));
    }
    found.push_back({i, end - i});
    i = end;
  }
  if (found.size() != expected.size()) {
    return Status::InvalidData(fmt::format("the prompt has {} image placeholder run(s) for {} image(s)", found.size(),
                                           expected.size()));
  }
  return found;
}

Result<std::vector<Placeholder>> CheckServerPlaceholders(std::string_view mm_placeholders,
                                                         std::span<const int32_t> prompt,
                                                         std::span<const int64_t> expected,
                                                         const ProcessorSpec& spec) {
  Json j = Json::parse(mm_placeholders, nullptr, false);
  if (!j.is_object()) return Status::InvalidData("the server's mm_placeholders is not an object");
  std::vector<Placeholder> ranges;
  for (const auto& [modality, list] : j.items()) {
    if (!list.is_array()) return Status::InvalidData("the server's mm_placeholders." + modality + " is not a list");
    if (modality != "image") {
      if (!list.empty()) return Status::InvalidData("the server placed " + modality + " items, which forge-pack does not pack");
      continue;
    }
    for (const Json& r : list) {
      if (!r.is_object() || !r.contains("offset") || !r.contains("length") || !r["offset"].is_number_unsigned() ||
          !r["length"].is_number_unsigned()) {
        return Status::InvalidData("the server's mm_placeholders.image holds a range without offset and length");
      }
      ranges.push_back({r["offset"].get<size_t>(), r["length"].get<size_t>()});
    }
  }
  if (ranges.size() != expected.size()) {
    return Status::InvalidData(fmt::format("the server placed {} image(s), the request had {}", ranges.size(),
                                           expected.size()));
  }
  for (size_t k = 0; k < ranges.size(); ++k) {
    const Placeholder& r = ranges[k];
    if (r.length != static_cast<size_t>(expected[k])) {
      return Status::InvalidData(fmt::format("the server gave image {} {} placeholder tokens, its size gives {}", k,
                                             r.length, expected[k]));
    }
    if (r.offset + r.length > prompt.size() || (k > 0 && r.offset < ranges[k - 1].offset + ranges[k - 1].length)) {
      return Status::InvalidData(fmt::format("the server's range for image {} is outside the prompt or out of order", k));
    }
    for (size_t i = r.offset; i < r.offset + r.length; ++i) {
      if (prompt[i] != spec.image_token_id) {
        return Status::InvalidData(fmt::format("the server's range for image {} holds id {} at {}, not the image token",
                                               k, prompt[i], i));
      }
    }
  }
  return ranges;
}

}  // namespace forge::pack
