// Approximate search with an HNSW graph (hnswlib) for sets too large for the
// exact search: each item asks for its k nearest neighbours and keeps those at
// or above the threshold. Its recall is measured against the exact search on a
// sample of items, so the report says what the approximation cost.
#pragma once

#include "base/status.h"
#include "dedup/similarity_graph.h"
#include "records/jsonl.h"

namespace forge::dedup {

struct HnswOptions {
  size_t m = 16;
  size_t ef_construction = 200;
  size_t ef_search = 128;
  size_t k = 32;              // neighbours asked for per item
  size_t recall_sample = 1000;  // items checked against exact search (0: none)
};

struct HnswStats {
  double build_seconds = 0;
  double query_seconds = 0;
  size_t sample = 0;
  size_t exact_pairs = 0;     // pairs at or above the lowest threshold touching the sample
  size_t found_pairs = 0;     // of those, found by HNSW
  size_t top1_matches = 0;    // sample items whose highest similarity HNSW found
  records::Json ToJson() const;
};

Result<SimilarityGraph> HnswSearch(const VectorSet& vectors, const SearchOptions& options,
                                   const HnswOptions& hnsw, HnswStats* stats);

}  // namespace forge::dedup
