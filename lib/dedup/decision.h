// Which items a similarity graph drops, given a threshold.
//
// SemDeDup (default): walk the items in rank order; an item is dropped when its
// similarity to an earlier-ranked item that was KEPT reaches the threshold.
// The best-ranked item of every group survives, and an item whose only close
// neighbour was itself dropped survives too (no chaining through dropped items).
//
// Components: items joined by edges at or above the threshold form connected
// components; each keeps only its best-ranked item. This chains (A~B, B~C drops
// C even when A and C are far apart), as MinHash-LSH tools do.
#pragma once

#include <cstdint>
#include <vector>

#include "dedup/similarity_graph.h"

namespace forge::dedup {

enum class DecisionMode { kSemDeDup, kComponents };

struct Decision {
  static constexpr uint32_t kKept = UINT32_MAX;
  std::vector<uint32_t> matched;  // per item: kKept, or the kept item that caused the drop
  std::vector<float> score;       // per dropped item: its similarity to `matched` (or the edge)
  size_t dropped = 0;
};

Decision Decide(const SimilarityGraph& graph, size_t count, float threshold, DecisionMode mode);

}  // namespace forge::dedup
