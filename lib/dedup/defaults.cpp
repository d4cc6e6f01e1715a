#include "dedup/defaults.h"

#include <fmt/format.h>

#include <cstdlib>

namespace forge::dedup {

std::string DefaultsHelp() {
  return fmt::format(
      "{:.2f} (cosine of hashed character {}-grams) or, with --embedding minhash, {:.2f} "
      "(estimated Jaccard of {}-gram shingles): each finds >= 97 % of pairs of texts with up to "
      "10 % of their words edited, at >= 99 % precision, in bench/dedup_calibrate.sh's sets, "
      "and in the sets it kept aside",
      kDefaultNgramThreshold, kDefaultNgramN, kDefaultMinHashThreshold, kDefaultMinHashN);
}

Result<float> ParseThreshold(const std::string& text, EmbeddingKind kind, bool model) {
  if (text.empty()) {
    if (model) return kDefaultModelThreshold;
    return kind == EmbeddingKind::kMinHash ? kDefaultMinHashThreshold : kDefaultNgramThreshold;
  }
  char* end = nullptr;
  float value = std::strtof(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(value > -1.0f && value <= 1.0f)) {
    return Status::InvalidArgument("--threshold " + text + ": expected a number in (-1, 1]");
  }
  return value;
}

}  // namespace forge::dedup
