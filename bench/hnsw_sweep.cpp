// HNSW recall at scale, per query strategy, without a full query pass: builds
// hnswlib's graph once over N vectors (the ones bench-dedup_search's HNSW part
// uses, seed 7), finds the exact threshold pairs of a sample of items, then
// queries only the sampled items, once per strategy:
//
//   own  EF   the beam search starts at the item's own node (what forge-dedup
//             does: no descent from the top layer)
//   top  EF   hnswlib's searchKnn: descent from the top layer, beam EF
//   own A + top B   both, results merged
//
// A pair counts as found when the query of its sampled item returns it, so
// the figure is a lower bound on the pair recall of a full run (which also
// finds a pair from its other end). Query time is per sampled item.
//
//   bench-hnsw_sweep [N=1000000] [THRESHOLD=0.9] [SAMPLE=1000]
//   (BENCH_HNSW_M and BENCH_HNSW_EFC override forge-dedup's M and ef_construction;
//   BENCH_HNSW_KERNEL=hnswlib keeps hnswlib's own distance kernel;
//   BENCH_HNSW_ONLY="own 64,own 256" runs only the strategies so named)
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "dedup/exact_search.h"
#include "dedup/hnsw_search.h"
#include "dedup/hnsw_space.h"
#include "random_vectors.h"

using Clock = std::chrono::steady_clock;
using Index = hnswlib::HierarchicalNSW<float>;

namespace {

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Labels a strategy returns for item `label` (itself excluded).
using Strategy = std::function<std::vector<size_t>(Index&, const float* query, size_t label)>;

template <typename Queue>
std::vector<size_t> Labels(Index& index, Queue found, size_t self) {
  std::vector<size_t> out;
  for (; !found.empty(); found.pop()) {
    size_t label = index.getExternalLabel(found.top().second);
    if (label != self) out.push_back(label);
  }
  return out;
}

Strategy OwnNode(size_t ef) {
  return [ef](Index& index, const float* query, size_t label) {
    return Labels(index, index.searchBaseLayerST<false>(index.label_lookup_.at(label), query, ef), label);
  };
}

Strategy TopDown(size_t ef) {
  return [ef](Index& index, const float* query, size_t label) {
    auto found = index.searchKnn(query, ef);
    std::vector<size_t> out;
    for (; !found.empty(); found.pop()) {
      if (found.top().second != label) out.push_back(found.top().second);
    }
    return out;
  };
}

// Two searches from different starting points miss a pair independently
// enough that their union may reach recall one wide beam does not.
Strategy Both(size_t own_ef, size_t top_ef) {
  return [own_ef, top_ef](Index& index, const float* query, size_t label) {
    auto found = OwnNode(own_ef)(index, query, label);
    auto more = TopDown(top_ef)(index, query, label);
    found.insert(found.end(), more.begin(), more.end());
    return found;
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const size_t n = argc > 1 ? std::stoul(argv[1]) : 1000000;
  const float threshold = argc > 2 ? std::stof(argv[2]) : 0.9f;
  const size_t s = std::min(n, argc > 3 ? std::stoul(argv[3]) : size_t{1000});
  const size_t d = 384;
  size_t m = forge::dedup::HnswOptions().m, ef_construction = forge::dedup::HnswOptions().ef_construction;
  if (const char* v = std::getenv("BENCH_HNSW_M")) m = std::stoul(v);
  if (const char* v = std::getenv("BENCH_HNSW_EFC")) ef_construction = std::stoul(v);
  const int threads = forge::dedup::ThreadCount(0);
  std::printf("hnsw sweep: N=%zu d=%zu threshold=%.3f M=%zu ef_construction=%zu sample=%zu threads=%d (%s)\n", n, d,
              threshold, m, ef_construction, s, threads, LoadAverage().c_str());
  std::vector<float> x = MakeVectors(n, d, 7);

  const char* kernel = std::getenv("BENCH_HNSW_KERNEL");
  forge::dedup::InnerProductSpace space(d, !kernel || std::string(kernel) != "hnswlib");
  std::printf("  distance kernel: %s\n", space.kernel().c_str());
  Index index(&space, n, m, ef_construction);
  auto start = Clock::now();
  std::clock_t cpu = std::clock();
  index.addPoint(&x[0], 0);
  {
    std::atomic<size_t> next{1};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < n;) {
        index.addPoint(&x[i * d], i);
        if (i % 100000 == 0) std::fprintf(stderr, "built %zu of %zu (%.0f s)\n", i, n, Seconds(start));
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  std::printf("  build: %.0f s wall, %.0f s cpu (%s)\n", Seconds(start),
              static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC, LoadAverage().c_str());

  // Exact pairs of the sample: sample rows x all rows, in column blocks.
  std::vector<size_t> sample(s);
  for (size_t i = 0; i < s; ++i) sample[i] = i * n / s;
  std::vector<float> queries(s * d);
  for (size_t i = 0; i < s; ++i) std::copy_n(&x[sample[i] * d], d, &queries[i * d]);
  std::vector<std::vector<size_t>> exact(s);
  const size_t block = 4096;
  std::vector<float> sims(s * block);
  for (size_t b0 = 0; b0 < n; b0 += block) {
    size_t cols = std::min(block, n - b0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(s), static_cast<int>(cols),
                static_cast<int>(d), 1.0f, queries.data(), static_cast<int>(d), &x[b0 * d], static_cast<int>(d), 0.0f,
                sims.data(), static_cast<int>(cols));
    for (size_t i = 0; i < s; ++i) {
      for (size_t c = 0; c < cols; ++c) {
        if (b0 + c != sample[i] && sims[i * cols + c] >= threshold) exact[i].push_back(b0 + c);
      }
    }
  }
  size_t exact_pairs = 0;
  for (const auto& e : exact) exact_pairs += e.size();
  std::printf("  exact pairs touching the sample: %zu\n", exact_pairs);

  const std::vector<std::pair<std::string, Strategy>> strategies = {
      {"own 64", OwnNode(64)},     {"own 256", OwnNode(256)},   {"own 1024", OwnNode(1024)},
      {"top 64", TopDown(64)},     {"top 256", TopDown(256)},   {"top 1024", TopDown(1024)},
      {"own 64 + top 64", Both(64, 64)},    {"own 64 + top 256", Both(64, 256)},
      {"own 256 + top 256", Both(256, 256)},
  };
  std::printf("  %-26s %12s %14s\n", "strategy", "pair recall", "us per query");
  // BENCH_HNSW_ONLY="own 64,own 256": only those (a quick look at a graph).
  const char* only = std::getenv("BENCH_HNSW_ONLY");
  for (const auto& [name, strategy] : strategies) {
    if (only && ("," + std::string(only) + ",").find("," + name + ",") == std::string::npos) continue;
    size_t found = 0;
    auto t0 = Clock::now();
    for (size_t i = 0; i < s; ++i) {
      std::vector<size_t> got = strategy(index, &x[sample[i] * d], sample[i]);
      std::unordered_set<size_t> got_set(got.begin(), got.end());
      for (size_t other : exact[i]) found += got_set.count(other);
    }
    double us = Seconds(t0) * 1e6 / static_cast<double>(s);
    std::printf("  %-26s %12.4f %14.0f\n", name.c_str(),
                exact_pairs ? static_cast<double>(found) / static_cast<double>(exact_pairs) : 1.0, us);
  }
  return 0;
}
