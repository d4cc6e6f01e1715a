// Exact threshold search over N random unit vectors (384-d) with forge's
// blocked BLAS search, side by side with FAISS IndexFlatIP range_search when
// the build found FAISS; then HNSW (hnswlib) build and query time and recall@10
// against exact search on a sample.
//
//   bench-dedup_search [N=100000] [HNSW_N=1000000] [THRESHOLD=0.9]
//
// Pure random vectors in 384-d have cosines near 0, so a tenth of the vectors
// are made noisy copies of others: the search then has real pairs to find.
#include <cblas.h>
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dedup/exact_search.h"
#include "dedup/ngram_embedder.h"

#ifdef FORGE_HAVE_FAISS
#include <faiss/IndexFlat.h>
#include <faiss/impl/AuxIndexStructures.h>
#include <omp.h>
#endif

using namespace forge::dedup;
using Clock = std::chrono::steady_clock;

// Process CPU seconds: on a shared machine wall time alone says little.
static double Cpu() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

static double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

static std::vector<float> MakeVectors(size_t n, size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n * d);
  for (size_t i = 0; i < n; ++i) {
    float* row = &x[i * d];
    if (i >= 10 && i % 10 == 0) {
      // A noisy copy of an earlier vector: cosine about 0.9-0.99.
      size_t source = rng() % i;
      float noise = 0.1f + 0.4f * static_cast<float>(rng() % 1000) / 1000.0f;
      for (size_t k = 0; k < d; ++k) row[k] = x[source * d + k] + noise * normal(rng) / std::sqrt(float(d));
    } else {
      for (size_t k = 0; k < d; ++k) row[k] = normal(rng);
    }
    NormaliseL2(std::span<float>(row, d));
  }
  return x;
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured
  size_t n = argc > 1 ? std::stoul(argv[1]) : 100000;
  size_t hnsw_n = argc > 2 ? std::stoul(argv[2]) : 1000000;
  float threshold = argc > 3 ? std::stof(argv[3]) : 0.9f;
  const size_t d = 384;
  int threads = ThreadCount(0);
  std::printf("exact threshold search: N=%zu d=%zu threshold=%.3f threads=%d\n", n, d, threshold, threads);

  std::vector<float> x = MakeVectors(n, d, 42);
  VectorSet set{x.data(), n, d};
  SearchOptions options;
  options.min_threshold = threshold;
  auto start = Clock::now();
  double cpu = Cpu();
  auto graph = ExactSearch(set, options);
  double forge_seconds = Seconds(start);
  double forge_cpu = Cpu() - cpu;
  if (!graph.ok()) {
    std::fprintf(stderr, "forge search failed: %s\n", graph.status().message().c_str());
    return 1;
  }
  std::printf("  %-38s %8.2f s wall %8.2f s cpu  %zu pairs\n", "forge blocked ssyrk/sgemm (upper)",
              forge_seconds, forge_cpu, graph->pairs.size());

#ifdef FORGE_HAVE_FAISS
  {
    omp_set_num_threads(threads);
    faiss::IndexFlatIP index(d);
    index.add(n, x.data());
    faiss::RangeSearchResult result(n);
    start = Clock::now();
    cpu = Cpu();
    index.range_search(n, x.data(), threshold, &result);
    double faiss_seconds = Seconds(start);
    double faiss_cpu = Cpu() - cpu;
    // FAISS returns each pair from both ends and each vector with itself.
    std::set<std::pair<uint32_t, uint32_t>> faiss_pairs;
    for (size_t q = 0; q < n; ++q) {
      for (size_t k = result.lims[q]; k < result.lims[q + 1]; ++k) {
        size_t other = static_cast<size_t>(result.labels[k]);
        if (other > q) faiss_pairs.insert({uint32_t(q), uint32_t(other)});
      }
    }
    size_t same = 0;
    for (const auto& p : graph->pairs) same += faiss_pairs.count({p.earlier, p.later});
    std::printf("  %-38s %8.2f s wall %8.2f s cpu  %zu pairs\n", "FAISS IndexFlatIP range_search",
                faiss_seconds, faiss_cpu, faiss_pairs.size());
    std::printf("  same pairs: %zu of forge %zu / FAISS %zu; forge/FAISS wall %.2f, cpu %.2f\n",
                same, graph->pairs.size(), faiss_pairs.size(), forge_seconds / faiss_seconds,
                forge_cpu / faiss_cpu);
  }
#else
  std::printf("  FAISS: not built (libfaiss-dev not found at configure time)\n");
#endif
  x.clear();
  x.shrink_to_fit();

  if (hnsw_n == 0) return 0;
  std::printf("hnsw (hnswlib, M=16, ef_construction=200, ef=128): N=%zu d=%zu\n", hnsw_n, d);
  std::vector<float> y = MakeVectors(hnsw_n, d, 7);
  hnswlib::InnerProductSpace space(d);
  hnswlib::HierarchicalNSW<float> index(&space, hnsw_n, 16, 200);
  start = Clock::now();
  index.addPoint(&y[0], 0);
  std::atomic<size_t> next{1};
  auto build = [&] {
    for (size_t i; (i = next.fetch_add(1)) < hnsw_n;) index.addPoint(&y[i * d], i);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(build);
  for (auto& t : pool) t.join();
  double build_seconds = Seconds(start);

  // Recall@10 on a sample of queries against exact top-10 by brute force.
  const size_t sample = 1000, k = 10;
  index.setEf(128);
  std::vector<std::vector<size_t>> found(sample);
  start = Clock::now();
  std::atomic<size_t> q_next{0};
  auto query = [&] {
    for (size_t q; (q = q_next.fetch_add(1)) < sample;) {
      auto result = index.searchKnn(&y[(q * hnsw_n / sample) * d], k);
      while (!result.empty()) {
        found[q].push_back(result.top().second);
        result.pop();
      }
    }
  };
  pool.clear();
  for (int t = 0; t < threads; ++t) pool.emplace_back(query);
  for (auto& t : pool) t.join();
  double query_seconds = Seconds(start);

  std::vector<float> queries(sample * d);
  for (size_t q = 0; q < sample; ++q) {
    std::copy_n(&y[(q * hnsw_n / sample) * d], d, &queries[q * d]);
  }
  std::vector<std::vector<std::pair<float, size_t>>> best(sample);
  const size_t block = 8192;
  std::vector<float> sims(sample * block);
  start = Clock::now();
  for (size_t b0 = 0; b0 < hnsw_n; b0 += block) {
    size_t cols = std::min(block, hnsw_n - b0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, sample, cols, d, 1.0f, queries.data(), d,
                &y[b0 * d], d, 0.0f, sims.data(), cols);
    for (size_t q = 0; q < sample; ++q) {
      auto& b = best[q];
      for (size_t c = 0; c < cols; ++c) {
        float s = sims[q * cols + c];
        if (b.size() < k || s > b.front().first) {
          b.push_back({s, b0 + c});
          std::push_heap(b.begin(), b.end(), std::greater<>());
          if (b.size() > k) {
            std::pop_heap(b.begin(), b.end(), std::greater<>());
            b.pop_back();
          }
        }
      }
    }
  }
  double brute_seconds = Seconds(start);
  size_t hits = 0;
  for (size_t q = 0; q < sample; ++q) {
    for (auto& [s, id] : best[q]) {
      hits += std::count(found[q].begin(), found[q].end(), id) > 0;
    }
  }
  std::printf("  %-38s %8.2f s  (%.0f inserts/s)\n", "build", build_seconds, hnsw_n / build_seconds);
  std::printf("  %-38s %8.3f s  (%.0f queries/s)\n", "1000 queries, k=10", query_seconds,
              sample / query_seconds);
  std::printf("  %-38s %8.3f s  (baseline: BLAS brute force)\n", "exact top-10 for the same 1000",
              brute_seconds);
  std::printf("  recall@10 = %.4f (%zu of %zu)\n", double(hits) / (sample * k), hits, sample * k);
  return 0;
}
