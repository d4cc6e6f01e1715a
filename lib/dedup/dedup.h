// forge-dedup's pipeline: read records, pick the text to compare, drop exact
// copies, embed, search, decide, and write the kept records through untouched.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "dedup/decision.h"
#include "dedup/embedder.h"
#include "dedup/hnsw_search.h"
#include "dedup/ngram_embedder.h"
#include "dedup/similarity_graph.h"

namespace forge::dedup {

enum class IndexKind { kExact, kHnsw };

struct DedupOptions {
  std::vector<std::string> inputs{"-"};
  std::vector<std::string> fields;  // empty: the whole record without the id field
  std::string id_field = "id";
  std::string rank = "";            // e.g. "success desc, reward desc, tokens asc, id asc"
  float threshold = 0.9f;
  std::vector<float> report_thresholds{0.8f, 0.85f, 0.9f, 0.95f, 0.98f, 0.99f};
  DecisionMode mode = DecisionMode::kSemDeDup;
  IndexKind index = IndexKind::kExact;
  bool exact_stage = true;
  std::string dropped_path;
  std::string report_path;   // JSON report; empty: a table on stderr unless quiet
  bool quiet = false;
  bool strict = false;
  NgramOptions ngram;
  SearchOptions search;
  HnswOptions hnsw;
};

// Runs the pipeline with the given embedder (the n-gram one when null). Kept
// records go to stdout. Returns DataErr after finishing when input lines were
// malformed or records lacked the compared fields (those pass through).
Status RunDedup(const DedupOptions& options, Embedder* embedder);

}  // namespace forge::dedup
