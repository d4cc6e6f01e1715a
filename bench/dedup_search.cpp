// Exact threshold search over N random unit vectors (384-d) with forge's
// blocked BLAS search, side by side with FAISS IndexFlatIP range_search when
// the build found FAISS (same pairs checked); then forge's HNSW search
// (hnswlib) on HNSW_N vectors: build and query times and the recall of the
// threshold pairs against exact search on a 1000-item sample.
//
//   bench-dedup_search [N=100000] [HNSW_N=1000000] [THRESHOLD=0.9] [TILE]
//   (N=0 skips the exact part, HNSW_N=0 the HNSW part; BENCH_HNSW_M and
//   BENCH_HNSW_EFC override M and ef_construction; BENCH_DEDUP_NPY=FILE
//   writes the vectors to FILE as .npy and times both searches from reading
//   it, as `forge-dedup --vectors FILE` does)
//
// The vectors: bench/random_vectors.h.
#include <cblas.h>

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

#include "cli/terminal_env.h"
#include "dedup/exact_search.h"
#include "dedup/hnsw_search.h"
#include "dedup/ngram_embedder.h"
#include "dedup/vector_input.h"
#include "random_vectors.h"

#ifdef FORGE_HAVE_FAISS
#include <faiss/IndexFlat.h>
#include <faiss/impl/AuxIndexStructures.h>
#include <faiss/utils/distances.h>
#include <omp.h>
#endif

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

using namespace forge::dedup;
using Clock = std::chrono::steady_clock;

// The searches draw their progress on a terminal, as forge-dedup does.
static forge::cli::TerminalEnv bench_env("bench-dedup_search");

// Process CPU seconds: on a shared machine wall time alone says little.
static double Cpu() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

static double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Writes the vectors as a NumPy .npy file (version 1, '<f4', C order).
static bool WriteNpy(const char* path, const std::vector<float>& x, size_t n, size_t d) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(n) +
                     ", " + std::to_string(d) + "), }";
  dict += std::string((64 - (10 + dict.size() + 1) % 64) % 64, ' ') + "\n";
  std::string head = "\x93NUMPY\x01";
  head += '\0';
  head += static_cast<char>(dict.size() & 0xff);
  head += static_cast<char>(dict.size() >> 8);
  std::FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return false;
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size() &&
            std::fwrite(dict.data(), 1, dict.size(), f) == dict.size() &&
            std::fwrite(x.data(), 4, x.size(), f) == x.size();
  return std::fclose(f) == 0 && ok;
}

// What a user's vectors go through before the search: the file read
// (forge-dedup --vectors' reader), every row checked and scaled to unit length.
static bool LoadVectors(const char* npy, Matrix* m) {
  auto read = ReadVectorFile(npy, 0);
  if (!read.ok()) {
    std::fprintf(stderr, "%s\n", read.status().message().c_str());
    return false;
  }
  *m = std::move(*read);
  for (size_t i = 0; i < m->rows; ++i) {
    if (!CheckAndNormaliseRow(m->data.data() + i * m->dim, m->dim).empty()) return false;
  }
  return true;
}

// forge's exact search and FAISS's range search on the same vectors (from
// the .npy file when npy is set, the read included in both times).
static bool ExactVersusFaiss(const std::vector<float>& generated, size_t n, size_t d,
                             float threshold, size_t tile, int threads, const char* npy,
                             double* forge_seconds) {
  Matrix m;
  SearchOptions options;
  options.min_threshold = threshold;
  options.tile = tile;
  auto start = Clock::now();
  double cpu = Cpu();
  if (npy != nullptr && !LoadVectors(npy, &m)) return false;
  const float* x = npy != nullptr ? m.data.data() : generated.data();
  double read_seconds = Seconds(start);
  auto graph = ExactSearch(VectorSet{x, n, d}, options, bench_env);
  *forge_seconds = Seconds(start);
  double forge_cpu = Cpu() - cpu;
  if (!graph.ok()) {
    std::fprintf(stderr, "forge search failed: %s\n", graph.status().message().c_str());
    return false;
  }
  std::printf("  %-38s %8.2f s wall %8.2f s cpu  %zu pairs  (read %.2f s; bound prefix %zu of "
              "%zu dims; %s)\n",
              "forge blocked ssyrk/sgemm (upper)", *forge_seconds, forge_cpu, graph->pairs.size(),
              read_seconds, graph->prefix_dims, d, LoadAverage().c_str());
#ifdef FORGE_HAVE_FAISS
  // FAISS parallelises its sgemm through BLAS threads (and its result
  // handling through OpenMP); forge switched BLAS to one thread for itself,
  // so give FAISS the same cores back.
  m = Matrix();
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(threads);
  omp_set_num_threads(threads);
  start = Clock::now();
  cpu = Cpu();
  if (npy != nullptr) {
    auto read = ReadVectorFile(npy, 0);
    if (!read.ok()) return false;
    m = std::move(*read);
    faiss::fvec_renorm_L2(d, n, m.data.data());
    x = m.data.data();
  }
  faiss::IndexFlatIP index(d);
  index.add(n, x);
  faiss::RangeSearchResult result(n);
  index.range_search(n, x, threshold, &result);
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
  std::printf("  %-38s %8.2f s wall %8.2f s cpu  %zu pairs  (%s)\n",
              "FAISS IndexFlatIP range_search", faiss_seconds, faiss_cpu, faiss_pairs.size(),
              LoadAverage().c_str());
  std::printf("  same pairs: %zu of forge %zu / FAISS %zu; forge/FAISS wall %.3f, cpu %.3f "
              "(target <= %s)\n",
              same, graph->pairs.size(), faiss_pairs.size(), *forge_seconds / faiss_seconds,
              forge_cpu / faiss_cpu, npy != nullptr ? "0.2 with the file read" : "0.5");
#else
  (void)threads;
  std::printf("  FAISS: not built (libfaiss-dev not found at configure time)\n");
#endif
  return true;
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured
  size_t n = argc > 1 ? std::stoul(argv[1]) : 100000;
  size_t hnsw_n = argc > 2 ? std::stoul(argv[2]) : 1000000;
  float threshold = argc > 3 ? std::stof(argv[3]) : 0.9f;
  size_t tile = argc > 4 ? std::stoul(argv[4]) : SearchOptions().tile;
  const size_t d = 384;
  int threads = ThreadCount(0);
  double forge_seconds = 0;

  if (n > 0) {
    const char* npy = std::getenv("BENCH_DEDUP_NPY");
    std::printf("exact threshold search: N=%zu d=%zu threshold=%.3f threads=%d tile=%zu%s%s (%s)\n",
                n, d, threshold, threads, tile, npy ? ", vectors read from " : "", npy ? npy : "",
                LoadAverage().c_str());
    std::vector<float> x = MakeVectors(n, d, 42);
    if (npy != nullptr && !WriteNpy(npy, x, n, d)) {
      std::fprintf(stderr, "cannot write %s\n", npy);
      return 1;
    }
    if (!ExactVersusFaiss(x, n, d, threshold, tile, threads, npy, &forge_seconds)) return 1;
  }

  if (hnsw_n == 0) return 0;
  HnswOptions hnsw;
  if (const char* m = std::getenv("BENCH_HNSW_M")) hnsw.m = std::stoul(m);
  if (const char* ef = std::getenv("BENCH_HNSW_EFC")) hnsw.ef_construction = std::stoul(ef);
  std::printf("hnsw (hnswlib, M=%zu, ef_construction=%zu, first beam %zu grown x2 while full of "
              "pairs): N=%zu d=%zu threshold=%.3f (%s)\n",
              hnsw.m, hnsw.ef_construction, hnsw.ef_search, hnsw_n, d, threshold, LoadAverage().c_str());
  std::vector<float> y = MakeVectors(hnsw_n, d, 7);
  SearchOptions options;
  options.min_threshold = threshold;
  HnswStats stats;
  auto start = Clock::now();
  double cpu = Cpu();
  auto graph = HnswSearch(VectorSet{y.data(), hnsw_n, d}, options, hnsw, &stats, bench_env);
  double total = Seconds(start);
  double total_cpu = Cpu() - cpu;
  if (!graph.ok()) {
    std::fprintf(stderr, "hnsw search failed: %s\n", graph.status().message().c_str());
    return 1;
  }
  std::printf("  distance kernel: %s\n", stats.kernel.c_str());
  std::printf("  %-38s %8.2f s wall %8.2f s cpu  (%.0f inserts per cpu-s)\n", "build",
              stats.build_seconds, stats.build_cpu_seconds, hnsw_n / stats.build_cpu_seconds);
  std::printf("  %-38s %8.2f s wall %8.2f s cpu  (%.0f queries per cpu-s; %zu regrown, %zu "
              "capped)\n",
              "query every item (self-join)", stats.query_seconds, stats.query_cpu_seconds,
              hnsw_n / stats.query_cpu_seconds, stats.regrown, stats.beam_capped);
  std::printf("  %-38s %8.2f s wall %8.2f s cpu  (%zu pairs)  (%s)\n",
              "total incl. recall check", total, total_cpu, graph->pairs.size(), LoadAverage().c_str());
  double recall = stats.exact_pairs ? double(stats.found_pairs) / stats.exact_pairs : 1.0;
  std::printf("  pair recall at %.2f on a %zu-item sample vs exact BLAS search: %.4f (%zu of %zu); "
              "top-1 %.4f (target >= 0.99)\n",
              threshold, stats.sample, recall, stats.found_pairs, stats.exact_pairs,
              double(stats.top1_matches) / std::max<size_t>(1, stats.sample));
  if (forge_seconds > 0) {
    double scale = double(hnsw_n) / n;
    std::printf("  baseline: forge exact search on N=%zu, estimated from the N=%zu run x %.1f "
                "(N^2): %.0f s\n",
                hnsw_n, n, scale * scale, forge_seconds * scale * scale);
  }
  return 0;
}
