// What a similarity search hands to the decision: the pairs of items whose
// cosine similarity reaches the lowest threshold of interest, and each item's
// highest similarity to any other item (for the report's distribution).
// Items are indexed in rank order, so `earlier` is the better-ranked one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace forge::dedup {

struct SimilarPair {
  uint32_t earlier;
  uint32_t later;
  float score;
};

struct SimilarityGraph {
  std::vector<SimilarPair> pairs;  // sorted by (later, earlier); earlier < later
  std::vector<float> best;         // per item; -1 when there is no other item
  // best is exact at and above this value; below it, only "below" is known
  // (the exact search skipped pairs that could not reach the threshold).
  float best_resolved_from = -1.0f;
  size_t tiles = 0, pruned_tiles = 0;  // exact search: tiles finished by the bound
  size_t prefix_dims = 0;              // exact search: dimensions in the bound's prefix
};

// A row-major matrix of unit vectors, one per item, in rank order.
struct VectorSet {
  const float* data = nullptr;
  size_t count = 0;
  size_t dim = 0;
  const float* row(size_t i) const { return data + i * dim; }
};

struct SearchOptions {
  float min_threshold = 0.9f;  // keep pairs with score >= this
  int threads = 0;             // 0: hardware concurrency
  size_t tile = 1024;          // rows per block of the exact search
  size_t max_pairs = 200'000'000;  // refuse to hold more (memory bound)
  bool prefix_bound = true;        // exact search: skip pairs the prefix bound rules out
};

// Sorts pairs into (later, earlier) order, the order the decision expects.
void SortPairs(std::vector<SimilarPair>& pairs);

}  // namespace forge::dedup
