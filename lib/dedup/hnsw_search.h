// Approximate search with an HNSW graph (hnswlib) for sets too large for the
// exact search. Every item is already a node of the graph, so its query skips
// hnswlib's descent from the top layer (the step that gets lost on hard data)
// and starts the base-layer beam search at the item itself. The beam keeps its
// ef nearest; while the farthest of them still reaches the threshold there may
// be more pairs beyond it, so the query is repeated with twice the beam (a
// range query by growing k). Recall of the threshold pairs is measured against
// the exact search on a sample of items, so the report says what the
// approximation cost.
#pragma once

#include <string>

#include "base/env.h"
#include "base/status.h"
#include "dedup/similarity_graph.h"
#include "records/jsonl.h"

namespace forge::dedup {

struct HnswOptions {
  // A denser graph than hnswlib's usual 16/200: on isotropic 384-d data
  // 16/200 finds 0.9885 of the threshold pairs at 300,000 items and 0.89 at
  // 1,000,000; 32/400 finds all at 300,000, for 3.2x the build.
  size_t m = 32;
  size_t ef_construction = 400;
  size_t ef_search = 64;      // first beam per item (at least k)
  size_t k = 32;              // neighbours asked for per item
  size_t max_ef = 8192;       // the beam stops growing here
  size_t recall_sample = 1000;  // items checked against exact search (0: none)
};

struct HnswStats {
  double build_seconds = 0;
  double query_seconds = 0;
  double build_cpu_seconds = 0;  // process CPU time: steadier than wall on a shared machine
  double query_cpu_seconds = 0;
  size_t sample = 0;
  size_t exact_pairs = 0;     // pairs at or above the lowest threshold touching the sample
  size_t found_pairs = 0;     // of those, found by HNSW
  size_t top1_matches = 0;    // sample items whose highest similarity HNSW found
  size_t regrown = 0;         // queries repeated with a wider beam
  size_t beam_capped = 0;     // queries whose beam reached max_ef still full of pairs
  std::string kernel;         // the distance kernel (hnsw_space.h)
  records::Json ToJson() const;
};

// Progress and the stop come from env.
Result<SimilarityGraph> HnswSearch(const VectorSet& vectors, const SearchOptions& options,
                                   const HnswOptions& hnsw, HnswStats* stats, Env& env);

}  // namespace forge::dedup
