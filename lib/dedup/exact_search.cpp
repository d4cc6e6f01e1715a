#include "dedup/exact_search.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "cli/progress.h"
#include "cli/signals.h"

// OpenBLAS's own switch; declared weak so that another BLAS still links.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace forge::dedup {

void SortPairs(std::vector<SimilarPair>& pairs) {
  std::sort(pairs.begin(), pairs.end(), [](const SimilarPair& a, const SimilarPair& b) {
    return a.later != b.later ? a.later < b.later : a.earlier < b.earlier;
  });
}

int ThreadCount(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

void UseSingleThreadedBlas() {
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
}

namespace {

struct TileJob {
  size_t a, b;  // tile row and column, a <= b
};

// Per-thread state: a tile buffer, the pairs found, and a running best
// similarity per item (merged at the end; no locks in the hot loop).
struct Worker {
  std::vector<float> tile;
  std::vector<float> column_best;
  std::vector<SimilarPair> pairs;
  std::vector<float> best;
};

// Scans one computed tile. Rows are items a0.., columns items b0..; on the
// diagonal only the strict upper triangle counts.
void ScanTile(Worker& w, size_t a0, size_t rows, size_t b0, size_t cols, bool diagonal,
              float threshold) {
  float* column_best = w.column_best.data();
  std::fill(column_best, column_best + cols, -2.0f);
  for (size_t r = 0; r < rows; ++r) {
    const float* row = w.tile.data() + r * cols;
    size_t start = diagonal ? r + 1 : 0;
    // Eight running maxima so that the compiler vectorises the reduction.
    float lanes[8] = {-2, -2, -2, -2, -2, -2, -2, -2};
    size_t c = start;
    for (; c + 8 <= cols; c += 8) {
      for (int k = 0; k < 8; ++k) {
        float v = row[c + k];
        lanes[k] = v > lanes[k] ? v : lanes[k];
        column_best[c + k] = v > column_best[c + k] ? v : column_best[c + k];
      }
    }
    for (; c < cols; ++c) {
      float v = row[c];
      lanes[0] = v > lanes[0] ? v : lanes[0];
      column_best[c] = v > column_best[c] ? v : column_best[c];
    }
    float row_best = *std::max_element(lanes, lanes + 8);
    size_t item = a0 + r;
    if (row_best > w.best[item]) w.best[item] = row_best;
    if (row_best < threshold) continue;
    for (size_t k = start; k < cols; ++k) {
      if (row[k] >= threshold) {
        w.pairs.push_back(SimilarPair{static_cast<uint32_t>(item), static_cast<uint32_t>(b0 + k),
                                      row[k]});
      }
    }
  }
  for (size_t k = 0; k < cols; ++k) {
    if (column_best[k] > w.best[b0 + k]) w.best[b0 + k] = column_best[k];
  }
}

}  // namespace

Result<SimilarityGraph> ExactSearch(const VectorSet& vectors, const SearchOptions& options) {
  const size_t n = vectors.count, d = vectors.dim;
  SimilarityGraph graph;
  graph.best.assign(n, -1.0f);
  if (n < 2) return graph;
  if (n > UINT32_MAX) return Status::Usage("too many items for one search");
  const size_t tile = std::max<size_t>(16, options.tile);
  const size_t tiles = (n + tile - 1) / tile;
  std::vector<TileJob> jobs;
  for (size_t a = 0; a < tiles; ++a) {
    for (size_t b = a; b < tiles; ++b) jobs.push_back({a, b});
  }
  const int threads = std::min<int>(ThreadCount(options.threads), static_cast<int>(jobs.size()));
  UseSingleThreadedBlas();

  std::vector<Worker> workers(threads);
  std::atomic<size_t> next{0};
  std::atomic<size_t> pairs_found{0};
  std::atomic<bool> too_many{false};
  cli::Progress progress("similarity tiles", jobs.size());

  auto work = [&](Worker& w) {
    w.tile.resize(tile * tile);
    w.column_best.resize(tile);
    w.best.assign(n, -1.0f);
    for (;;) {
      size_t j = next.fetch_add(1);
      if (j >= jobs.size() || cli::StopRequested() || too_many.load()) return;
      const TileJob& job = jobs[j];
      size_t a0 = job.a * tile, b0 = job.b * tile;
      size_t rows = std::min(tile, n - a0), cols = std::min(tile, n - b0);
      size_t before = w.pairs.size();
      if (job.a == job.b) {
        // Upper triangle of A·Aᵀ only; the lower half of the buffer is stale
        // and never read.
        cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, static_cast<int>(rows),
                    static_cast<int>(d), 1.0f, vectors.row(a0), static_cast<int>(d), 0.0f,
                    w.tile.data(), static_cast<int>(cols));
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
                    static_cast<int>(cols), static_cast<int>(d), 1.0f, vectors.row(a0),
                    static_cast<int>(d), vectors.row(b0), static_cast<int>(d), 0.0f,
                    w.tile.data(), static_cast<int>(cols));
      }
      ScanTile(w, a0, rows, b0, cols, job.a == job.b, options.min_threshold);
      if (pairs_found.fetch_add(w.pairs.size() - before) + (w.pairs.size() - before) >
          options.max_pairs) {
        too_many = true;
      }
      progress.Advance();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, std::ref(workers[t]));
  work(workers[0]);
  for (auto& t : pool) t.join();
  progress.Finish();

  if (cli::StopRequested()) return Status::Cancelled("stopped during the similarity search");
  if (too_many) {
    return Status::Usage("more than " + std::to_string(options.max_pairs) +
                         " similar pairs at threshold " + std::to_string(options.min_threshold) +
                         "; raise the lowest threshold (--threshold/--report-thresholds)");
  }
  size_t total = 0;
  for (const Worker& w : workers) total += w.pairs.size();
  graph.pairs.reserve(total);
  for (Worker& w : workers) {
    graph.pairs.insert(graph.pairs.end(), w.pairs.begin(), w.pairs.end());
    for (size_t i = 0; i < n; ++i) graph.best[i] = std::max(graph.best[i], w.best[i]);
    w = Worker();
  }
  SortPairs(graph.pairs);
  return graph;
}

}  // namespace forge::dedup
