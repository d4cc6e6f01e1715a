#include "base/clock.h"
#include "dedup/dedup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <unordered_map>

#include "dedup/calibrate.h"
#include "dedup/exact_search.h"
#include "dedup/ranking.h"
#include "dedup/report.h"
#include "dedup/text.h"
#include "dedup/trajectory.h"
#include "dedup/vector_input.h"
#include "records/jsonl.h"

namespace forge::dedup {

namespace {

constexpr size_t kNoRow = SIZE_MAX;

struct Item {
  records::Record record;
  std::string id;
  std::string text;
  bool compared = true;         // false: lacked the fields, passed through
  size_t row = kNoRow;          // precomputed vectors: its row
  bool dropped = false;
  std::string matched_id;
  float score = 0;
  const char* stage = "";
};

// Everything read: the records, and the vectors given with them, if any.
struct Input {
  std::vector<Item> items;
  size_t missing = 0;  // records passed through uncompared
  Matrix vectors;      // precomputed: rows referenced by Item::row
};

std::string FieldList(const std::vector<std::string>& fields) {
  std::string s;
  for (const auto& f : fields) s += (s.empty() ? "" : ", ") + f;
  return s;
}

bool Precomputed(const DedupOptions& o) { return !o.vector_field.empty() || !o.vectors_path.empty(); }

// A record that cannot be compared passes through, named.
void PassThrough(const DedupOptions& o, Input& in, Item& item, const std::string& why) {
  ++in.missing;
  item.compared = false;
  o.env->Warn(why + "; record passed through without comparison");
}

// The text compared for a record (or, with precomputed vectors, used for the
// exact stage and snippets); false when it has none (the item passes through).
Result<bool> TakeText(const DedupOptions& o, store::Store* store, records::Record& r, Input& in,
                      Item& item) {
  if (o.trajectories) {
    auto rollout = ExtractId(r.json, o.rollout_field);
    std::string trajectory;
    if (rollout) {
      auto rendered = TrajectoryText(*store, *rollout);
      if (!rendered.ok()) return rendered.status().Prefixed(r.where());
      trajectory = std::move(*rendered);
    }
    if (trajectory.empty()) {
      PassThrough(o, in, item, r.where() + ": " +
                                (rollout ? "rollout " + *rollout + " has no recorded calls in the store"
                                         : "no " + o.rollout_field + " field"));
      return false;
    }
    std::optional<std::string> text;
    if (!o.fields.empty()) text = ExtractText(r.json, o.fields, o.id_field);
    item.text = text ? *text + "\n" + trajectory : trajectory;
    return true;
  }
  auto text = ExtractText(r.json, o.fields, o.id_field);
  if (!text && Precomputed(o)) text = ExtractText(r.json, {}, o.id_field);
  if (!text) {
    PassThrough(o, in, item, r.where() + ": none of the fields (" + FieldList(o.fields) + ") is present");
    return false;
  }
  item.text = std::move(*text);
  return true;
}

// --vector-field: the record's array becomes the next row of in.vectors.
void TakeFieldVector(const DedupOptions& o, records::Record& r, Input& in, Item& item) {
  const records::Json* value = FindPath(r.json, o.vector_field);
  std::string why = value ? AppendJsonVector(*value, in.vectors.data)
                          : "has no " + o.vector_field + " field";
  if (why.empty()) {
    size_t dim = in.vectors.data.size() - in.vectors.rows * in.vectors.dim;
    if (in.vectors.rows == 0) in.vectors.dim = dim;
    if (dim != in.vectors.dim) {
      in.vectors.data.resize(in.vectors.rows * in.vectors.dim);
      why = "has " + std::to_string(dim) + " numbers, the first vector had " +
            std::to_string(in.vectors.dim);
    } else {
      why = CheckAndNormaliseRow(in.vectors.data.data() + in.vectors.rows * dim, dim);
      if (why.empty()) {
        item.row = in.vectors.rows++;
        return;
      }
      in.vectors.data.resize(in.vectors.rows * dim);
    }
  }
  PassThrough(o, in, item, r.where() + ": vector " + o.vector_field + " " + why);
}

// 1. Reads every record (the decision needs the whole set). Returns the
// reader's status: InvalidData when lines were malformed (the rest flowed).
Status ReadItems(const DedupOptions& o, store::Store* store, Input& in) {
  records::ReaderOptions reader{.strict = o.strict};
  return records::ForEachRecord(o.inputs, *o.env, reader, [&](records::Record& r) {
    Item item;
    auto id = ExtractId(r.json, o.id_field);
    item.id = id ? *id : r.where();
    auto has_text = TakeText(o, store, r, in, item);
    if (!has_text.ok()) return has_text.status();
    if (*has_text && !o.vector_field.empty()) TakeFieldVector(o, r, in, item);
    item.record = std::move(r);
    in.items.push_back(std::move(item));
    return Status::Ok();
  });
}

// --vectors FILE: one row per record, in input order.
Status AttachFileVectors(const DedupOptions& o, const Status& read, Input& in) {
  auto m = ReadVectorFile(o.vectors_path, o.vectors_dim);
  if (!m.ok()) return m.status();
  if (m->rows != in.items.size()) {
    return Status::InvalidData(
        o.vectors_path + ": " + std::to_string(m->rows) + " rows, but the input has " +
        std::to_string(in.items.size()) + " records (one row per record, in input order" +
        (read.ok() ? "" : "; " + read.message() + ", which have no row") + ")");
  }
  in.vectors = std::move(*m);
  for (size_t i = 0; i < in.items.size(); ++i) {
    Item& item = in.items[i];
    if (!item.compared) continue;
    std::string why = CheckAndNormaliseRow(in.vectors.data.data() + i * in.vectors.dim, in.vectors.dim);
    if (why.empty()) {
      item.row = i;
    } else {
      PassThrough(o, in, item, o.vectors_path + ": row " + std::to_string(i) + " (" +
                                   item.record.where() + ") " + why);
    }
  }
  return Status::Ok();
}

// 3. Exact stage: the best-ranked copy of each normalised text survives.
std::vector<size_t> ExactStage(const DedupOptions& o, const std::vector<size_t>& order,
                               std::vector<Item>& items, size_t* dropped) {
  std::vector<size_t> survivors;
  std::unordered_map<std::string, size_t> first;
  for (size_t i : order) {
    if (!o.exact_stage) {
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
      ++*dropped;
    }
  }
  return survivors;
}

// 4a. The survivors' vectors, in survivor order: given, or embedded.
Result<Matrix> SurvivorVectors(const DedupOptions& o, Embedder* embedder, Input& in,
                               const std::vector<size_t>& survivors, records::Json* provenance) {
  if (Precomputed(o)) {
    Matrix m;
    m.rows = survivors.size();
    m.dim = in.vectors.dim;
    m.data.resize(m.rows * m.dim);
    for (size_t k = 0; k < survivors.size(); ++k) {
      const float* row = in.vectors.data.data() + in.items[survivors[k]].row * m.dim;
      std::copy(row, row + m.dim, m.data.data() + k * m.dim);
    }
    in.vectors = Matrix();
    *provenance = {{"kind", "precomputed"}, {"dim", m.dim},
                   {"source", o.vectors_path.empty() ? "field " + o.vector_field : o.vectors_path}};
    return m;
  }
  std::vector<std::string> texts;
  texts.reserve(survivors.size());
  for (size_t i : survivors) texts.push_back(in.items[i].text);
  auto embedded = embedder->Embed(texts);
  if (embedded.ok()) *provenance = embedder->Provenance();
  return embedded;
}

Status CheckOptions(const DedupOptions& o, store::Store* store) {
  if (o.threshold <= -1.0f || o.threshold > 1.0f) {
    return Status::InvalidArgument("--threshold must be in (-1, 1]");
  }
  if (o.trajectories && store == nullptr) {
    return Status::InvalidArgument("--trajectories needs --store (the store holding the rollouts' calls)");
  }
  if (!o.vector_field.empty() && !o.vectors_path.empty()) {
    return Status::InvalidArgument("give --vector-field or --vectors, not both");
  }
  return Status::Ok();
}

// 5. The decision at the chosen threshold (marking the dropped items) and a
// row of counts (with near misses when calibrating) at every threshold.
records::Json Thresholds(const DedupOptions& o, const SimilarityGraph& graph,
                         const std::vector<float>& thresholds, const std::vector<size_t>& survivors,
                         size_t exact_dropped, std::vector<Item>& items) {
  records::Json rows = records::Json::array();
  auto view = [&](uint32_t k) {
    const Item& item = items[survivors[k]];
    return ItemView{item.id, item.record.where(), item.text};
  };
  for (float t : thresholds) {
    Decision d = Decide(graph, survivors.size(), t, o.mode);
    size_t dropped = d.dropped + exact_dropped;
    records::Json row = {{"threshold", std::round(t * 1e4) / 1e4},
                         {"kept", items.size() - dropped}, {"dropped", dropped}};
    if (o.calibrate) row["near_misses"] = NearMisses(graph, t, o.near_misses, view);
    if (t == o.threshold) {
      row["chosen"] = true;
      for (size_t k = 0; k < survivors.size(); ++k) {
        if (d.matched[k] == Decision::kKept) continue;
        Item& item = items[survivors[k]];
        item.dropped = true;
        item.matched_id = items[survivors[d.matched[k]]].id;
        item.score = d.score[k];
        item.stage = o.mode == DecisionMode::kSemDeDup ? "similar" : "component";
      }
    }
    rows.push_back(row);
  }
  return rows;
}

// 6. Kept records in input order, exactly as read (a CRLF line keeps its \r),
// or, when calibrating, the threshold rows; then the side files.
Status WriteOutputs(const DedupOptions& o, const std::vector<Item>& items,
                    const SimilarityGraph& graph, const std::vector<size_t>& survivors,
                    const records::Json& report) {
  records::JsonlWriter out;
  if (o.calibrate) {
    for (const auto& row : report["thresholds"]) FORGE_RETURN_IF_ERROR(out.Write(row));
  } else {
    for (const Item& item : items) {
      if (!item.dropped) FORGE_RETURN_IF_ERROR(out.WriteLine(item.record.text));
    }
  }
  if (!o.dropped_path.empty() && !o.calibrate) {
    auto dropped = records::JsonlWriter::Create(o.dropped_path);
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
  if (!o.pairs_path.empty()) {
    auto pairs = records::JsonlWriter::Create(o.pairs_path);
    if (!pairs.ok()) return pairs.status();
    for (const SimilarPair& p : graph.pairs) {
      FORGE_RETURN_IF_ERROR((*pairs)->Write({{"a", items[survivors[p.earlier]].id},
                                             {"b", items[survivors[p.later]].id},
                                             {"score", std::round(p.score * 1e6) / 1e6}}));
    }
  }
  if (!o.report_path.empty()) {
    std::ofstream file(o.report_path);
    file << report.dump(2) << "\n";
    if (!file) return Status::CannotCreate("cannot write report " + o.report_path);
  } else if (!o.quiet) {
    std::string table = FormatReport(report);
    if (o.calibrate) table += FormatCalibration(report["thresholds"]);
    o.env->Text(table);
  }
  return Status::Ok();
}

}  // namespace

Status RunDedup(const DedupOptions& options, Embedder* embedder, store::Store* store) {
  auto rank_keys = ParseRankKeys(options.rank);
  if (!rank_keys.ok()) return rank_keys.status();
  FORGE_RETURN_IF_ERROR(CheckOptions(options, store));
  NgramEmbedder ngram_embedder(options.ngram);
  MinHashEmbedder minhash_embedder(options.minhash);
  if (embedder == nullptr) {
    embedder = options.embedding == EmbeddingKind::kMinHash
                   ? static_cast<Embedder*>(&minhash_embedder)
                   : static_cast<Embedder*>(&ngram_embedder);
  }

  Input in;
  Status read = ReadItems(options, store, in);
  bool malformed = !read.ok() && read.kind() == Kind::kInvalidData && !options.strict;
  if (!read.ok() && !malformed) return read;
  if (!options.vectors_path.empty()) FORGE_RETURN_IF_ERROR(AttachFileVectors(options, read, in));
  std::vector<Item>& items = in.items;

  // 2. Rank the compared items; index i below is a position in this order.
  std::vector<size_t> compared;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].compared) compared.push_back(i);
  }
  std::vector<const records::Json*> jsons;
  for (size_t i : compared) jsons.push_back(&items[i].record.json);
  std::vector<size_t> order;
  for (size_t k : RankOrder(jsons, *rank_keys)) order.push_back(compared[k]);

  size_t exact_dropped = 0;
  std::vector<size_t> survivors = ExactStage(options, order, items, &exact_dropped);

  // 4. Vectors for the survivors, then the search for similar pairs.
  auto start = std::chrono::steady_clock::now();
  records::Json provenance;
  auto embedded = SurvivorVectors(options, embedder, in, survivors, &provenance);
  if (!embedded.ok()) return embedded.status();
  double embed_seconds = SecondsSince(start);

  std::vector<float> thresholds = options.report_thresholds;
  thresholds.push_back(options.threshold);
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  SearchOptions search = options.search;
  // Calibrating shows the pairs just below the lowest threshold too.
  search.min_threshold = std::max(-1.0f, thresholds.front() - (options.calibrate ? 0.05f : 0.0f));
  VectorSet vectors{embedded->data.data(), embedded->rows, embedded->dim};

  start = std::chrono::steady_clock::now();
  HnswStats hnsw_stats;
  Result<SimilarityGraph> graph = options.index == IndexKind::kExact
                                      ? ExactSearch(vectors, search, *options.env)
                                      : HnswSearch(vectors, search, options.hnsw, &hnsw_stats, *options.env);
  if (!graph.ok()) return graph.status();
  double search_seconds = SecondsSince(start);

  records::Json report;
  report["records"] = items.size();
  report["compared"] = compared.size();
  report["not_compared"] = in.missing;
  report["exact_duplicates"] = exact_dropped;
  report["mode"] = options.mode == DecisionMode::kSemDeDup ? "semdedup" : "components";
  report["rank"] = options.rank;
  report["embedding"] = provenance;
  report["embedding"]["seconds"] = embed_seconds;
  report["search"] = {{"index", options.index == IndexKind::kExact ? "exact" : "hnsw"},
                      {"items", vectors.count},
                      {"pairs", graph->pairs.size()},
                      {"min_threshold", search.min_threshold},
                      {"tiles", graph->tiles},
                      {"tiles_finished_by_bound", graph->pruned_tiles},
                      {"bound_prefix_dims", graph->prefix_dims},
                      {"seconds", search_seconds}};
  report["thresholds"] = Thresholds(options, *graph, thresholds, survivors, exact_dropped, items);
  report["highest_similarity"] = Distribution(graph->best, 20, graph->best_resolved_from);
  if (options.index == IndexKind::kHnsw) report["recall"] = hnsw_stats.ToJson();

  FORGE_RETURN_IF_ERROR(WriteOutputs(options, items, *graph, survivors, report));
  if (malformed) return read;
  if (in.missing > 0) {
    return Status::InvalidData(std::to_string(in.missing) + " record" + (in.missing == 1 ? "" : "s") +
                           " lacked the compared fields or a usable vector and passed through "
                           "unchecked");
  }
  return Status::Ok();
}

}  // namespace forge::dedup
