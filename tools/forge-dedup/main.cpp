// forge-dedup: remove near-duplicate records by embedding similarity.

#include "cli/tool.h"
#include <cstdlib>
#include <filesystem>

#include "dedup/dedup.h"
#include "dedup/defaults.h"
#include "dedup/remote_embedder.h"
#include "store/store.h"

int main(int argc, char** argv) {
  using namespace forge::dedup;
  forge::cli::Tool tool("forge-dedup",
                        "Remove exact and near-duplicate JSONL records by embedding similarity.\n"
                        "Kept records are written to stdout unchanged, in input order.");
  tool.ExitCodes({forge::cli::ExitCode::kUsage, forge::cli::ExitCode::kDataErr, forge::cli::ExitCode::kNoInput,
                  forge::cli::ExitCode::kUnavailable, forge::cli::ExitCode::kSoftware,
                  forge::cli::ExitCode::kCantCreate, forge::cli::ExitCode::kIoErr,
                  forge::cli::ExitCode::kTempFail, forge::cli::ExitCode::kProtocol});
  CLI::App& app = tool.app();
  DedupOptions o;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "Write no records: for every threshold (--report-thresholds and --threshold), one JSON line "
      "with what it keeps and drops and the --near-misses pairs scoring nearest it on either "
      "side (ids, similarity, both texts from just before their first difference); a table on "
      "stderr. Takes every option of forge-dedup");
  calibrate->fallthrough();
  app.require_subcommand(0, 1);
  app.add_option("--near-misses", o.near_misses,
                 "calibrate: pairs shown on each side of each threshold (3)");

  app.add_option("inputs", o.inputs, "JSONL files to read ('-' for stdin; default stdin)");
  app.add_option("--field,-f", o.fields,
                 "Dotted path of a field holding the text to compare (repeatable; joined by "
                 "newlines). Default: the whole record without the id field");
  app.add_option("--id-field", o.id_field, "Dotted path of the record id (default id)");
  app.add_flag("--trajectories", o.trajectories,
               "Compare rollouts by their trajectory rendered from --store (every main call's new "
               "messages and reply, 'role: text' lines); --field text, if given, goes first");
  app.add_option("--rollout-field", o.rollout_field,
                 "Dotted path of the rollout id used by --trajectories (default rollout_id)");
  app.add_option("--rank", o.rank,
                 "Who survives among duplicates: ordered keys, e.g. 'success desc,reward desc,"
                 "tokens asc,id asc'; missing values sort last; input order breaks ties");
  std::string threshold;
  app.add_option("--threshold,-t", threshold,
                 "Similarity at or above which an item is a duplicate. Default " +
                     DefaultsHelp() + "; precomputed vectors: 0.9 (cosine; calibrate on a sample)");
  app.add_option("--report-thresholds", o.report_thresholds,
                 "Thresholds the report counts kept/dropped at (default 0.8,0.85,0.9,0.95,0.98,0.99)")
      ->delimiter(',');
  std::string mode = "semdedup", index = "exact";
  app.add_option("--mode", mode,
                 "semdedup: drop an item similar to an earlier-ranked kept item (default); "
                 "components: keep the best-ranked item of each connected component")
      ->check(CLI::IsMember({"semdedup", "components"}));
  app.add_option("--index", index, "exact: blocked BLAS all-pairs search (default); hnsw: "
                                     "approximate, for very large sets, recall reported")
      ->check(CLI::IsMember({"exact", "hnsw"}));
  bool no_exact = false;
  app.add_flag("--no-exact-stage", no_exact, "Skip the exact (normalised hash) stage");
  app.add_option("--dropped", o.dropped_path,
                 "Write dropped records' id, matched_id, score, stage, where as JSONL to FILE");
  app.add_option("--report", o.report_path,
                 "Write the JSON report to FILE (default: a table on stderr)");
  app.add_flag("--quiet,-q", o.quiet, "No report table on stderr");
  app.add_flag("--strict", o.strict, "A malformed input line is an error (exit 65)");
  std::string embedding = "ngram";
  app.add_option("--embedding", embedding,
                 "Model-free embedding: ngram (hashed character n-grams, cosine; default) or "
                 "minhash (cosine = estimated Jaccard of n-gram shingles; threshold is a Jaccard)")
      ->check(CLI::IsMember({"ngram", "minhash"}));
  int ngram = 0;
  app.add_option("--ngram", ngram,
                 "Character n-gram length of the model-free embeddings (default " +
                     std::to_string(kDefaultNgramN) + " for ngram, " +
                     std::to_string(kDefaultMinHashN) + " for minhash)")
      ->check(CLI::Range(1, 64));
  app.add_option("--minhash-hashes", o.minhash.hashes, "MinHash values per text (128)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--minhash-bits", o.minhash.bits,
                 "Bits kept of each MinHash value (3; dim = hashes x 2^bits)")
      ->check(CLI::Range(1, 8));
  CLI::Option* dim = app.add_option("--dim", o.ngram.dim,
                                     "Dimension of the n-gram embedding (1024); with a raw "
                                     "--vectors file, the length of its rows")
                          ->check(CLI::Range(1, 1 << 20));
  app.add_option("--vector-field", o.vector_field,
                 "Compare the vectors in this field of each record (dotted path; an array of "
                 "numbers, scaled to unit length) instead of embedding text");
  app.add_option("--vectors", o.vectors_path,
                 "Compare the vectors of this file, one row per record in input order: .npy "
                 "(float32, records x dimensions) or raw float32 rows of --dim values");
  app.add_option("--pairs", o.pairs_path,
                 "Write every pair found at or above the lowest threshold as JSONL "
                 "{a, b, score} (ids) to FILE");
  app.add_option("--threads,-j", o.search.threads, "Search threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--tile", o.search.tile, "Rows per block of the exact search (1024)")
      ->check(CLI::Range(16, 1 << 16));
  app.add_option("--max-pairs", o.search.max_pairs,
                 "Refuse to hold more similar pairs than this (memory bound)");
  app.add_option("--hnsw-m", o.hnsw.m, "HNSW links per node (32)");
  app.add_option("--hnsw-ef-construction", o.hnsw.ef_construction, "HNSW build beam (400)");
  app.add_option("--hnsw-ef", o.hnsw.ef_search,
                 "HNSW first query beam (64); doubled while its farthest member still reaches "
                 "the threshold");
  app.add_option("--hnsw-k", o.hnsw.k, "Neighbours asked for per item at least (32)");
  app.add_option("--hnsw-max-ef", o.hnsw.max_ef, "Largest query beam (8192)");
  app.add_option("--recall-sample", o.hnsw.recall_sample,
                 "Items checked against exact search to report HNSW recall (1000)");

  app.footer(app.get_footer() + "\n\n" +
      "The default thresholds, in edits: on real documentation, man pages, code and agent\n"
      "trajectories (bench/dedup_calibrate.sh), pairs of texts with up to 10 % of their words\n"
      "edited (substituted, inserted, deleted or moved) score at or above them in >= 97 % of\n"
      "cases at every edit rate, and >= 99 % of the pairs found are such pairs. Other data:\n"
      "'forge-dedup calibrate' shows the pairs nearest each threshold. Figures of the search\n"
      "(against FAISS, HNSW recall): bench/README.md. See forge-dedup(1), docs/forge-dedup.md.");

  RemoteOptions remote;
  std::string store_path, api_key_env = "FORGE_EMBED_API_KEY";
  app.add_option("--embed-url", remote.url,
                 "OpenAI-compatible embeddings endpoint (base URL, .../v1 or .../v1/embeddings); "
                 "default: the model-free n-gram embedding");
  app.add_option("--embed-model", remote.model, "Model name sent to the endpoint");
  app.add_option("--embed-batch", remote.batch, "Texts per request (32)");
  app.add_option("--embed-concurrency", remote.concurrency, "Requests in flight (4)");
  app.add_option("--embed-retries", remote.retries,
                 "Retries of a request after 5xx, 429 or a connection failure (4)");
  app.add_option("--embed-timeout", remote.timeout_seconds, "Seconds per request (120)");
  app.add_option("--embed-api-key-env", api_key_env,
                 "Environment variable holding a bearer token (FORGE_EMBED_API_KEY)");
  app.add_option("--store", store_path,
                 "forge store (SQLite): its embeddings table caches endpoint vectors by "
                 "content hash and model; --trajectories reads rollouts' calls from it");

  return tool.Run(argc, argv, [&]() -> forge::Status {
    o.exact_stage = !no_exact;
    o.mode = mode == "components" ? DecisionMode::kComponents : DecisionMode::kSemDeDup;
    o.index = index == "hnsw" ? IndexKind::kHnsw : IndexKind::kExact;
    o.embedding = embedding == "minhash" ? EmbeddingKind::kMinHash : EmbeddingKind::kNgram;
    o.calibrate = calibrate->parsed();
    bool precomputed = !o.vector_field.empty() || !o.vectors_path.empty();
    if (precomputed && !remote.url.empty()) {
      return forge::Status::InvalidArgument("--vector-field/--vectors take the place of --embed-url; give one");
    }
    if (!o.vectors_path.empty() && dim->count() > 0) o.vectors_dim = o.ngram.dim;
    if (!o.vector_field.empty() && dim->count() > 0) {
      return forge::Status::InvalidArgument("--dim with --vector-field: the field's arrays give the dimension");
    }
    o.ngram.n = ngram > 0 ? ngram : kDefaultNgramN;
    o.minhash.n = ngram > 0 ? ngram : kDefaultMinHashN;
    auto chosen = ParseThreshold(threshold, o.embedding, precomputed || !remote.url.empty());
    if (!chosen.ok()) return chosen.status();
    o.threshold = *chosen;
    std::unique_ptr<forge::store::Store> store;
    if (!store_path.empty()) {
      if (o.trajectories && !std::filesystem::exists(store_path)) {
        return forge::Status::NotFound(store_path + ": no such store");
      }
      auto opened = forge::store::Store::Open(store_path);
      if (!opened.ok()) return opened.status().Prefixed(store_path);
      store = std::move(*opened);
    }
    if (remote.url.empty()) return RunDedup(o, nullptr, store.get());
    if (const char* key = std::getenv(api_key_env.c_str())) remote.api_key = key;
    std::unique_ptr<EmbeddingCache> cache;
    if (store) cache = std::make_unique<StoreEmbeddingCache>(store.get());
    RemoteEmbedder embedder(remote, cache.get());
    return RunDedup(o, &embedder, store.get());
  });
}
