// forge-dedup's pipeline: read records, pick the text to compare, drop exact
// copies, embed, search, decide, and write the kept records through untouched.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "dedup/decision.h"
#include "dedup/embedder.h"
#include "dedup/hnsw_search.h"
#include "dedup/ngram_embedder.h"
#include "dedup/similarity_graph.h"
#include "store/store.h"

namespace forge::dedup {

enum class IndexKind { kExact, kHnsw };
enum class EmbeddingKind { kNgram, kMinHash };

struct DedupOptions {
  Env* env = nullptr;  // required: reports, progress, the stop
  std::vector<std::string> inputs{"-"};
  std::vector<std::string> fields;  // empty: the whole record without the id field
  // Compare rollouts by their trajectory rendered from the store (the record's
  // rollout_field names the rollout); --field text, if any, is put first.
  bool trajectories = false;
  std::string rollout_field = "rollout_id";
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
  // Vectors the user already has, instead of embedding: a record field
  // holding an array of numbers, or a side file (.npy, or raw float32 rows of
  // vectors_dim values) with one row per record in input order.
  std::string vector_field;
  std::string vectors_path;
  size_t vectors_dim = 0;
  // Every pair found at or above the lowest threshold, as JSONL {a, b, score}.
  std::string pairs_path;
  // Calibrate: no records out; per threshold, counts and the `near_misses`
  // pairs nearest it on either side, as JSONL on stdout (table on stderr).
  bool calibrate = false;
  size_t near_misses = 3;
  EmbeddingKind embedding = EmbeddingKind::kNgram;  // model-free kinds
  NgramOptions ngram;
  MinHashOptions minhash;
  SearchOptions search;
  HnswOptions hnsw;
};

// Runs the pipeline with the given embedder (options.embedding's model-free
// one when null). Kept records go to stdout; the report's table, unless
// quiet or written to report_path, to options.env. Returns InvalidData after finishing
// when input lines were malformed or records lacked the compared fields or
// trajectory (those pass through). store is needed for options.trajectories.
Status RunDedup(const DedupOptions& options, Embedder* embedder, store::Store* store = nullptr);

}  // namespace forge::dedup
