#include "dedup/dedup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <unordered_map>

#include "cli/diagnostics.h"
#include "dedup/exact_search.h"
#include "dedup/ranking.h"
#include "dedup/report.h"
#include "dedup/text.h"
#include "dedup/trajectory.h"
#include "records/jsonl.h"

namespace forge::dedup {

namespace {

struct Item {
  records::Record record;
  std::string id;
  std::string text;
  bool compared = true;         // false: lacked the fields, passed through
  bool dropped = false;
  std::string matched_id;
  float score = 0;
  const char* stage = "";
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string FieldList(const std::vector<std::string>& fields) {
  std::string s;
  for (const auto& f : fields) s += (s.empty() ? "" : ", ") + f;
  return s;
}

}  // namespace

Status RunDedup(const DedupOptions& options, Embedder* embedder, store::Store* store) {
  auto rank_keys = ParseRankKeys(options.rank);
  if (!rank_keys.ok()) return rank_keys.status();
  if (options.threshold <= -1.0f || options.threshold > 1.0f) {
    return Status::Usage("--threshold must be in (-1, 1]");
  }
  if (options.trajectories && store == nullptr) {
    return Status::Usage("--trajectories needs --store (the store holding the rollouts' calls)");
  }
  NgramEmbedder ngram_embedder(options.ngram);
  MinHashEmbedder minhash_embedder(options.minhash);
  if (embedder == nullptr) {
    embedder = options.embedding == EmbeddingKind::kMinHash
                   ? static_cast<Embedder*>(&minhash_embedder)
                   : static_cast<Embedder*>(&ngram_embedder);
  }

  // 1. Read everything: the decision needs the whole set.
  std::vector<Item> items;
  size_t missing = 0;
  records::ReaderOptions reader{.strict = options.strict};
  Status read = records::ForEachRecord(options.inputs, reader, [&](records::Record& r) {
    Item item;
    auto id = ExtractId(r.json, options.id_field);
    item.id = id ? *id : r.where();
    std::optional<std::string> text;
    if (options.trajectories) {
      auto rollout = ExtractId(r.json, options.rollout_field);
      std::string trajectory;
      if (rollout) {
        auto rendered = TrajectoryText(*store, *rollout);
        if (!rendered.ok()) return rendered.status().Prefixed(r.where());
        trajectory = std::move(*rendered);
      }
      if (trajectory.empty()) {
        ++missing;
        item.compared = false;
        cli::Warn(r.where() + ": " +
                  (rollout ? "rollout " + *rollout + " has no recorded calls in the store"
                           : "no " + options.rollout_field + " field") +
                  "; record passed through without comparison");
        item.record = std::move(r);
        items.push_back(std::move(item));
        return Status::Ok();
      }
      if (!options.fields.empty()) text = ExtractText(r.json, options.fields, options.id_field);
      text = text ? *text + "\n" + trajectory : trajectory;
    } else {
      text = ExtractText(r.json, options.fields, options.id_field);
    }
    if (!text) {
      ++missing;
      item.compared = false;
      cli::Warn(r.where() + ": none of the fields (" + FieldList(options.fields) +
                ") is present; record passed through without comparison");
    } else {
      item.text = std::move(*text);
    }
    item.record = std::move(r);
    items.push_back(std::move(item));
    return Status::Ok();
  });
  bool malformed = !read.ok() && read.code() == ExitCode::kDataErr && !options.strict;
  if (!read.ok() && !malformed) return read;

  // 2. Rank the compared items; index i below is a position in this order.
  std::vector<size_t> compared;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].compared) compared.push_back(i);
  }
  std::vector<const records::Json*> jsons;
  for (size_t i : compared) jsons.push_back(&items[i].record.json);
  std::vector<size_t> order;
  for (size_t k : RankOrder(jsons, *rank_keys)) order.push_back(compared[k]);

  // 3. Exact stage: the best-ranked copy of each normalised text survives.
  std::vector<size_t> survivors;
  size_t exact_dropped = 0;
  {
    std::unordered_map<std::string, size_t> first;
    for (size_t i : order) {
      if (!options.exact_stage) {
        survivors.push_back(i);
        continue;
      }
      auto [it, inserted] = first.emplace(ContentHash(Normalise(items[i].text)), i);
      if (inserted) {
        survivors.push_back(i);
      } else {
        Item& item = items[i];
        item.dropped = true;
        item.matched_id = items[it->second].id;
        item.score = 1.0f;
        item.stage = "exact";
        ++exact_dropped;
      }
    }
  }

  // 4. Embed the survivors and search for similar pairs.
  std::vector<std::string> texts;
  texts.reserve(survivors.size());
  for (size_t i : survivors) texts.push_back(items[i].text);
  auto start = std::chrono::steady_clock::now();
  auto embedded = embedder->Embed(texts);
  if (!embedded.ok()) return embedded.status();
  double embed_seconds = SecondsSince(start);
  texts.clear();
  texts.shrink_to_fit();

  std::vector<float> thresholds = options.report_thresholds;
  thresholds.push_back(options.threshold);
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  SearchOptions search = options.search;
  search.min_threshold = thresholds.front();
  VectorSet vectors{embedded->data.data(), embedded->rows, embedded->dim};

  start = std::chrono::steady_clock::now();
  HnswStats hnsw_stats;
  Result<SimilarityGraph> graph = options.index == IndexKind::kExact
                                      ? ExactSearch(vectors, search)
                                      : HnswSearch(vectors, search, options.hnsw, &hnsw_stats);
  if (!graph.ok()) return graph.status();
  double search_seconds = SecondsSince(start);

  // 5. Decide at the chosen threshold; count at every reported one.
  records::Json report;
  report["records"] = items.size();
  report["compared"] = compared.size();
  report["not_compared"] = missing;
  report["exact_duplicates"] = exact_dropped;
  report["mode"] = options.mode == DecisionMode::kSemDeDup ? "semdedup" : "components";
  report["rank"] = options.rank;
  report["embedding"] = embedder->Provenance();
  report["embedding"]["seconds"] = embed_seconds;
  report["search"] = {{"index", options.index == IndexKind::kExact ? "exact" : "hnsw"},
                      {"items", vectors.count},
                      {"pairs", graph->pairs.size()},
                      {"min_threshold", search.min_threshold},
                      {"tiles", graph->tiles},
                      {"tiles_finished_by_bound", graph->pruned_tiles},
                      {"seconds", search_seconds}};
  report["thresholds"] = records::Json::array();
  for (float t : thresholds) {
    Decision d = Decide(*graph, vectors.count, t, options.mode);
    size_t dropped = d.dropped + exact_dropped;
    records::Json row = {{"threshold", std::round(t * 1e4) / 1e4}, {"kept", items.size() - dropped}, {"dropped", dropped}};
    if (t == options.threshold) {
      row["chosen"] = true;
      for (size_t k = 0; k < survivors.size(); ++k) {
        if (d.matched[k] == Decision::kKept) continue;
        Item& item = items[survivors[k]];
        item.dropped = true;
        item.matched_id = items[survivors[d.matched[k]]].id;
        item.score = d.score[k];
        item.stage = options.mode == DecisionMode::kSemDeDup ? "similar" : "component";
      }
    }
    report["thresholds"].push_back(row);
  }
  report["highest_similarity"] = Distribution(graph->best, 20, graph->best_resolved_from);
  if (options.index == IndexKind::kHnsw) report["recall"] = hnsw_stats.ToJson();

  // 6. Kept records in input order, exactly as read; then what was dropped.
  records::JsonlWriter out;
  for (const Item& item : items) {
    if (!item.dropped) FORGE_RETURN_IF_ERROR(out.WriteLine(item.record.text));
  }
  if (!options.dropped_path.empty()) {
    auto dropped = records::JsonlWriter::Create(options.dropped_path);
    if (!dropped.ok()) return dropped.status();
    for (const Item& item : items) {
      if (!item.dropped) continue;
      FORGE_RETURN_IF_ERROR((*dropped)->Write({{"id", item.id},
                                               {"matched_id", item.matched_id},
                                               {"score", std::round(item.score * 1e6) / 1e6},
                                               {"stage", item.stage},
                                               {"where", item.record.where()}}));
    }
  }
  if (!options.report_path.empty()) {
    std::ofstream file(options.report_path);
    file << report.dump(2) << "\n";
    if (!file) return Status::CantCreate("cannot write report " + options.report_path);
  } else if (!options.quiet) {
    std::fputs(FormatReport(report).c_str(), stderr);
  }

  if (malformed) return read;
  if (missing > 0) {
    return Status::DataErr(std::to_string(missing) + " record" + (missing == 1 ? "" : "s") +
                           " lacked the compared fields and passed through unchecked");
  }
  return Status::Ok();
}

}  // namespace forge::dedup
