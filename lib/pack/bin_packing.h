// Best-fit decreasing: sequences, longest first, each into the open bin with
// the least room that still fits it (TRL's default packer). Bins are
// micro-batches holding at most `budget` tokens; no sequence is split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace forge::pack {

struct Bin {
  std::vector<size_t> items;  // indices into the lengths given
  int64_t used = 0;
};

// Every length must be in [1, budget]; the caller drops longer sequences.
std::vector<Bin> BestFitDecreasing(const std::vector<int64_t>& lengths, int64_t budget);

struct PackingFigures {
  int64_t bins = 0;
  int64_t tokens = 0;
  int64_t capacity = 0;       // bins × budget
  int64_t padding_waste = 0;  // capacity − tokens: what a fixed-shape batch pads
  double utilisation = 0;     // tokens / capacity
  int64_t ideal_bins = 0;     // ceil(tokens / budget), a lower bound
  double vs_ideal = 0;        // ideal_bins / bins
};

PackingFigures Figures(const std::vector<Bin>& bins, int64_t budget);

}  // namespace forge::pack
