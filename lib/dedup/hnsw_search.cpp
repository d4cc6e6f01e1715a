#include "base/clock.h"
#include "dedup/hnsw_search.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <thread>
#include <unordered_set>

#include "dedup/exact_search.h"
#include "dedup/hnsw_space.h"

namespace forge::dedup {

namespace {

// Runs body(i) for i in [0, count) on `threads` threads, until a stop.
template <typename Body>
void ParallelFor(size_t count, int threads, const StopToken& stop, Body body) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count && !stop.requested();) body(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

uint64_t PairKey(uint32_t a, uint32_t b) {
  return (static_cast<uint64_t>(std::min(a, b)) << 32) | std::max(a, b);
}

// Compares the sample's exact neighbours (sample rows × all rows, in column
// blocks) with what HNSW found.
void MeasureRecall(const VectorSet& v, const SearchOptions& options, const HnswOptions& hnsw,
                   const SimilarityGraph& graph, HnswStats* stats) {
  size_t n = v.count;
  size_t s = std::min(hnsw.recall_sample, n);
  if (s == 0) return;
  std::vector<uint32_t> sample(s);
  for (size_t i = 0; i < s; ++i) sample[i] = static_cast<uint32_t>(i * n / s);
  std::vector<float> queries(s * v.dim);
  for (size_t i = 0; i < s; ++i) std::copy_n(v.row(sample[i]), v.dim, &queries[i * v.dim]);

  std::unordered_set<uint32_t> in_sample(sample.begin(), sample.end());
  std::unordered_set<uint64_t> found;
  for (const SimilarPair& p : graph.pairs) {
    if (in_sample.count(p.earlier) || in_sample.count(p.later)) found.insert(PairKey(p.earlier, p.later));
  }
  std::vector<float> exact_best(s, -2.0f);
  const size_t block = 4096;
  std::vector<float> sims(s * block);
  UseSingleThreadedBlas();
  for (size_t b0 = 0; b0 < n; b0 += block) {
    size_t cols = std::min(block, n - b0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(s),
                static_cast<int>(cols), static_cast<int>(v.dim), 1.0f, queries.data(),
                static_cast<int>(v.dim), v.row(b0), static_cast<int>(v.dim), 0.0f, sims.data(),
                static_cast<int>(cols));
    for (size_t i = 0; i < s; ++i) {
      for (size_t c = 0; c < cols; ++c) {
        uint32_t other = static_cast<uint32_t>(b0 + c);
        if (other == sample[i]) continue;
        float x = sims[i * cols + c];
        exact_best[i] = std::max(exact_best[i], x);
        if (x >= options.min_threshold) {
          // A pair of two sampled items is counted once, from its smaller end.
          if (in_sample.count(other) && other < sample[i]) continue;
          stats->exact_pairs++;
          if (found.count(PairKey(sample[i], other))) stats->found_pairs++;
        }
      }
    }
  }
  stats->sample = s;
  for (size_t i = 0; i < s; ++i) {
    if (std::fabs(graph.best[sample[i]] - exact_best[i]) <= 1e-5f) stats->top1_matches++;
  }
}

}  // namespace

records::Json HnswStats::ToJson() const {
  records::Json j = {{"build_seconds", build_seconds}, {"query_seconds", query_seconds},
                     {"build_cpu_seconds", build_cpu_seconds},
                     {"query_cpu_seconds", query_cpu_seconds},
                     {"sample", sample}, {"exact_pairs", exact_pairs},
                     {"found_pairs", found_pairs}, {"regrown_queries", regrown},
                     {"beam_capped_queries", beam_capped}, {"distance_kernel", kernel}};
  j["pair_recall"] = exact_pairs ? static_cast<double>(found_pairs) / exact_pairs : 1.0;
  j["top1_recall"] = sample ? static_cast<double>(top1_matches) / sample : 1.0;
  return j;
}

Result<SimilarityGraph> HnswSearch(const VectorSet& v, const SearchOptions& options,
                                   const HnswOptions& hnsw, HnswStats* stats, Env& env) {
  SimilarityGraph graph;
  graph.best.assign(v.count, -1.0f);
  if (v.count < 2) return graph;
  const int threads = ThreadCount(options.threads);
  InnerProductSpace space(v.dim);
  stats->kernel = space.kernel();
  hnswlib::HierarchicalNSW<float> index(&space, v.count, hnsw.m, hnsw.ef_construction);

  auto start = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  {
    auto progress = env.StartProgress("hnsw build", v.count);
    // The first point goes in alone: hnswlib needs an entry point before
    // concurrent inserts.
    index.addPoint(v.row(0), 0);
    ParallelFor(v.count - 1, threads, env.stop(), [&](size_t i) {
      index.addPoint(v.row(i + 1), i + 1);
      progress->Advance();
    });
  }
  if (env.stop().requested()) return Status::Cancelled("stopped while building the HNSW index");
  stats->build_seconds = SecondsSince(start);
  stats->build_cpu_seconds = static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC;

  start = std::chrono::steady_clock::now();
  cpu = std::clock();
  std::vector<std::vector<SimilarPair>> per_item(v.count);
  std::atomic<size_t> regrown{0}, capped{0};
  {
    auto progress = env.StartProgress("hnsw query", v.count);
    ParallelFor(v.count, threads, env.stop(), [&](size_t i) {
      const hnswlib::tableint node = index.label_lookup_.at(i);
      size_t ef = std::max({hnsw.ef_search, hnsw.k + 1, size_t{2}});
      for (;;) {
        auto result = index.searchBaseLayerST<false>(node, v.row(i), ef);
        // The heap's top is the farthest member of the beam.
        bool full = result.size() >= ef;
        float farthest = 1.0f - result.top().first;
        if (full && farthest >= options.min_threshold && ef < hnsw.max_ef) {
          ef = std::min(ef * 2, hnsw.max_ef);
          regrown++;
          continue;
        }
        if (full && farthest >= options.min_threshold) capped++;
        float best = -1.0f;
        for (; !result.empty(); result.pop()) {
          auto [distance, internal] = result.top();
          size_t label = index.getExternalLabel(internal);
          if (label == i) continue;
          float score = 1.0f - distance;  // InnerProductSpace distance is 1 - <a,b>
          best = std::max(best, score);
          if (score >= options.min_threshold) {
            uint32_t a = static_cast<uint32_t>(std::min<size_t>(i, label));
            uint32_t b = static_cast<uint32_t>(std::max<size_t>(i, label));
            per_item[i].push_back(SimilarPair{a, b, score});
          }
        }
        graph.best[i] = best;
        break;
      }
      progress->Advance();
    });
  }
  stats->regrown = regrown;
  stats->beam_capped = capped;
  if (env.stop().requested()) return Status::Cancelled("stopped while querying the HNSW index");
  stats->query_seconds = SecondsSince(start);
  stats->query_cpu_seconds = static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC;

  for (auto& list : per_item) {
    graph.pairs.insert(graph.pairs.end(), list.begin(), list.end());
    if (graph.pairs.size() > options.max_pairs) {
      return Status::InvalidArgument("too many similar pairs; raise the lowest threshold");
    }
  }
  SortPairs(graph.pairs);
  // The same pair is usually found from both ends; keep one.
  graph.pairs.erase(std::unique(graph.pairs.begin(), graph.pairs.end(),
                                [](const SimilarPair& a, const SimilarPair& b) {
                                  return a.earlier == b.earlier && a.later == b.later;
                                }),
                    graph.pairs.end());
  // A pair found from one end only still raises the other end's best.
  for (const SimilarPair& p : graph.pairs) {
    graph.best[p.earlier] = std::max(graph.best[p.earlier], p.score);
    graph.best[p.later] = std::max(graph.best[p.later], p.score);
  }
  MeasureRecall(v, options, hnsw, graph, stats);
  return graph;
}

}  // namespace forge::dedup
