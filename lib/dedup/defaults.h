// The calibrated defaults: n-gram length and threshold per model-free
// embedding, chosen by bench/dedup_calibrate.sh on its chosen sets (real text
// of six kinds and four lengths from half of this machine's packages, three
// seeds) as the middle of the thresholds at which, in every seed, pairs of
// texts with up to 10 % of their words edited (substituted, inserted,
// deleted, moved 1-3 places) are found with recall >= 0.97 at every edit
// rate and precision >= 0.99; the other half of the packages, kept aside,
// checks them (docs/forge-dedup.md, "Calibration"; the figures in
// bench/README.md).
#pragma once

#include <string>

#include "base/status.h"
#include "dedup/dedup.h"

namespace forge::dedup {

inline constexpr int kDefaultNgramN = 5;
inline constexpr float kDefaultNgramThreshold = 0.75f;
inline constexpr int kDefaultMinHashN = 5;
inline constexpr float kDefaultMinHashThreshold = 0.62f;
// Vectors from a model (endpoint or precomputed): no calibration can hold for
// every model; 0.9 is a starting point for `forge-dedup calibrate`.
inline constexpr float kDefaultModelThreshold = 0.9f;

// What the default thresholds mean, for --help.
std::string DefaultsHelp();

// --threshold as given ("" for the default of the embedding in use; a model's
// vectors when `model` is true). A value must be a number in (-1, 1].
Result<float> ParseThreshold(const std::string& text, EmbeddingKind kind, bool model);

}  // namespace forge::dedup
