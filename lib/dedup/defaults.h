// The calibrated defaults: n-gram length and threshold per model-free
// embedding, chosen by bench/dedup_calibrate.sh so that pairs of texts with
// up to 10 % of their words edited (substituted, inserted, deleted, swapped)
// are found with recall >= 0.95 at precision >= 0.99 on real text of several
// kinds and lengths (docs/forge-dedup.md, "Calibration").
#pragma once

#include <string>

#include "base/status.h"
#include "dedup/dedup.h"

namespace forge::dedup {

inline constexpr int kDefaultNgramN = 5;
inline constexpr float kDefaultNgramThreshold = 0.8f;
inline constexpr int kDefaultMinHashN = 5;
inline constexpr float kDefaultMinHashThreshold = 0.67f;
// Vectors from a model (endpoint or precomputed): no calibration can hold for
// every model; 0.9 is a starting point for `forge-dedup calibrate`.
inline constexpr float kDefaultModelThreshold = 0.9f;

// What the default thresholds mean, for --help.
std::string DefaultsHelp();

// --threshold as given ("" for the default of the embedding in use; a model's
// vectors when `model` is true). A value must be a number in (-1, 1].
Result<float> ParseThreshold(const std::string& text, EmbeddingKind kind, bool model);

}  // namespace forge::dedup
