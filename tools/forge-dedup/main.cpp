// forge-dedup: remove near-duplicate records by embedding similarity.
#include <filesystem>

#include "cli/tool.h"
#include "dedup/defaults.h"
#include "forge-dedup/flags.h"
#include "store/store.h"

namespace {

using forge::Status;
using forge::tools::dedup::Args;

// The flags that depend on each other, checked and resolved into the options.
Status Settle(Args& a, const CLI::App& app) {
  forge::dedup::DedupOptions& o = a.options;
  o.exact_stage = !a.no_exact_stage;
  o.calibrate = a.calibrate->parsed();
  const bool precomputed = !o.vector_field.empty() || !o.vectors_path.empty();
  if (precomputed && !a.remote.url.empty()) {
    return Status::InvalidArgument("--vector-field/--vectors take the place of --embed-url; give one");
  }
  const bool dim_given = app.count("--dim") > 0;
  if (!o.vectors_path.empty() && dim_given) o.vectors_dim = o.ngram.dim;
  if (!o.vector_field.empty() && dim_given) {
    return Status::InvalidArgument("--dim with --vector-field: the field's arrays give the dimension");
  }
  o.ngram.n = a.ngram > 0 ? a.ngram : forge::dedup::kDefaultNgramN;
  o.minhash.n = a.ngram > 0 ? a.ngram : forge::dedup::kDefaultMinHashN;
  auto chosen = forge::dedup::ParseThreshold(a.threshold, o.embedding, precomputed || !a.remote.url.empty());
  if (!chosen.ok()) return chosen.status();
  o.threshold = *chosen;
  return Status::Ok();
}

forge::Result<std::unique_ptr<forge::store::Store>> OpenStore(const Args& a) {
  if (a.store_path.empty()) return std::unique_ptr<forge::store::Store>();
  if (a.options.trajectories && !std::filesystem::exists(a.store_path)) {
    return Status::NotFound(a.store_path + ": no such store");
  }
  auto opened = forge::store::Store::Open(a.store_path);
  if (!opened.ok()) return opened.status().Prefixed(a.store_path);
  return std::move(*opened);
}

Status Dedup(Args& a, const CLI::App& app, forge::Env& env) {
  FORGE_RETURN_IF_ERROR(Settle(a, app));
  a.options.env = &env;
  auto store = OpenStore(a);
  if (!store.ok()) return store.status();
  if (a.remote.url.empty()) return forge::dedup::RunDedup(a.options, nullptr, store->get());
  a.remote.api_key = env.VarOr(a.api_key_env, "");
  std::unique_ptr<forge::dedup::EmbeddingCache> cache;
  if (*store) cache = std::make_unique<forge::dedup::StoreEmbeddingCache>(store->get());
  forge::dedup::RemoteEmbedder embedder(a.remote, cache.get(), env);
  return forge::dedup::RunDedup(a.options, &embedder, store->get());
}

}  // namespace

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-dedup",
                        "Remove exact and near-duplicate JSONL records by embedding similarity.\n"
                        "Kept records are written to stdout unchanged, in input order.");
  tool.ExitCodes({forge::cli::ExitCode::kUsage, forge::cli::ExitCode::kDataErr, forge::cli::ExitCode::kNoInput,
                  forge::cli::ExitCode::kUnavailable, forge::cli::ExitCode::kSoftware,
                  forge::cli::ExitCode::kCantCreate, forge::cli::ExitCode::kIoErr,
                  forge::cli::ExitCode::kTempFail, forge::cli::ExitCode::kProtocol});
  CLI::App& app = tool.app();
  Args args;
  forge::tools::dedup::DefineFlags(app, args, tool.env());
  app.footer(app.get_footer() + "\n\n" +
      "The default thresholds, in edits: on real documentation, man pages, code and agent\n"
      "trajectories (bench/dedup_calibrate.sh), pairs of texts with up to 10 % of their words\n"
      "edited (substituted, inserted, deleted or swapped) score at or above them in >= 95 % of\n"
      "cases at every edit rate, and >= 99 % of the pairs found are such pairs. Other data:\n"
      "'forge-dedup calibrate' shows the pairs nearest each threshold. Figures of the search\n"
      "(against FAISS, HNSW recall): bench/README.md. See forge-dedup(1), docs/forge-dedup.md.");
  return tool.Run(argc, argv, [&] { return Dedup(args, app, tool.env()); });
}
