#include "dedup/exact_search.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>


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
  std::vector<uint32_t> candidates;  // (row, column) of a pruned tile, packed
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

// The prefix bound. Unit vectors split into a prefix (the first p dimensions)
// and a suffix: a·b = a_p·b_p + a_s·b_s <= a_p·b_p + |a_s||b_s| (Cauchy-Schwarz).
// So a tile is first computed on the prefix alone, and only the cells whose
// bound reaches the threshold get their suffix added; a pair below the bound
// cannot be a pair. The margin covers float rounding in both sums, so the
// pairs are exactly those of the full product.
constexpr float kBoundMargin = 1e-4f;
// A tile with more than this share of its cells still in play after the
// prefix is finished by a second matrix product instead.
constexpr double kCandidateShare = 1.0 / 16;

float SuffixDot(const float* a, const float* b, size_t count) {
  float sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t k = 0;
  for (; k + 8 <= count; k += 8) {
    for (int l = 0; l < 8; ++l) sum[l] += a[k + l] * b[k + l];
  }
  for (; k < count; ++k) sum[0] += a[k] * b[k];
  return ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]));
}

// Collects the cells of a prefix-only tile whose bound reaches the threshold.
// Returns false (and stops) once there are more than `limit` of them: then the
// tile is cheaper to finish with a second matrix product.
bool CollectCandidates(Worker& w, size_t rows, size_t cols, bool diagonal, const float* row_norm,
                       const float* col_norm, float floor, size_t limit) {
  w.candidates.clear();
  float col_max = *std::max_element(col_norm, col_norm + cols);
  for (size_t r = 0; r < rows; ++r) {
    const float* row = w.tile.data() + r * cols;
    const float rn = row_norm[r];
    const float row_floor = floor - rn * col_max;
    size_t start = diagonal ? r + 1 : 0;
    // Cheap test first: no cell of the row can pass if its largest prefix
    // score plus the largest suffix bound stays below.
    float lanes[8] = {-2, -2, -2, -2, -2, -2, -2, -2};
    size_t c = start;
    for (; c + 8 <= cols; c += 8) {
      for (int k = 0; k < 8; ++k) lanes[k] = row[c + k] > lanes[k] ? row[c + k] : lanes[k];
    }
    for (; c < cols; ++c) lanes[0] = row[c] > lanes[0] ? row[c] : lanes[0];
    if (*std::max_element(lanes, lanes + 8) < row_floor) continue;
    for (c = start; c < cols; ++c) {
      if (row[c] + rn * col_norm[c] >= floor) {
        if (w.candidates.size() >= limit) return false;
        w.candidates.push_back(static_cast<uint32_t>(r * cols + c));
      }
    }
  }
  return true;
}

// The prefix length (a multiple of 8) the bound works best with on these
// vectors, or d when no prefix is worth it. A shorter prefix halves the
// arithmetic again, but its bound is looser: more cells must have their
// suffix added one by one (far slower per multiply-add than BLAS), and a
// tile with too many is finished by a second product. So the candidates'
// share is measured on a sample of pairs for d/8, d/4 and d/2, and the prefix
// with the least estimated work chosen.
size_t ChoosePrefix(const VectorSet& v, float floor) {
  const size_t n = v.count, d = v.dim;
  const size_t sample = std::min<size_t>(n, 384), step = n / sample;
  size_t best = d;
  double best_cost = static_cast<double>(d);
  for (size_t divisor : {8, 4, 2}) {
    const size_t p = (d / divisor + 7) / 8 * 8;
    if (p < 16 || p >= d) continue;
    std::vector<float> norm(sample);
    for (size_t i = 0; i < sample; ++i) {
      const float* s = v.row(i * step) + p;
      norm[i] = std::sqrt(SuffixDot(s, s, d - p));
    }
    size_t pass = 0, pairs = 0;
    for (size_t i = 0; i < sample; ++i) {
      for (size_t j = i + 1; j < sample; ++j, ++pairs) {
        pass += SuffixDot(v.row(i * step), v.row(j * step), p) + norm[i] * norm[j] >= floor;
      }
    }
    const double share = static_cast<double>(pass) / std::max<size_t>(1, pairs);
    // One candidate's suffix costs about 16 multiply-adds of BLAS per dimension.
    const double cost = share > kCandidateShare / 2 ? static_cast<double>(d)
                                                    : static_cast<double>(p) + 16 * share * (d - p);
    if (cost < best_cost) {
      best_cost = cost;
      best = p;
    }
  }
  return best;
}

}  // namespace

Result<SimilarityGraph> ExactSearch(const VectorSet& vectors, const SearchOptions& options, Env& env) {
  const size_t n = vectors.count, d = vectors.dim;
  SimilarityGraph graph;
  graph.best.assign(n, -1.0f);
  if (n < 2) return graph;
  if (n > UINT32_MAX) return Status::InvalidArgument("too many items for one search");
  const size_t tile = std::max<size_t>(16, options.tile);
  const size_t tiles = (n + tile - 1) / tile;
  std::vector<TileJob> jobs;
  for (size_t a = 0; a < tiles; ++a) {
    for (size_t b = a; b < tiles; ++b) jobs.push_back({a, b});
  }
  const int threads = std::min<int>(ThreadCount(options.threads), static_cast<int>(jobs.size()));
  UseSingleThreadedBlas();

  // The prefix bound pays when most pairs are far below the threshold; with
  // few dimensions or a threshold near 0 it cannot prune, so it is not tried.
  // Nor on a set of a few tiles: that search is quick anyway, and without the
  // bound every item's highest similarity is known exactly, however low.
  const bool bound = options.prefix_bound && d >= 64 && options.min_threshold > 0.3f &&
                     tiles > 2;
  const float floor = options.min_threshold - kBoundMargin;
  const size_t prefix = bound ? ChoosePrefix(vectors, floor) : d;
  const size_t suffix = d - prefix;
  std::vector<float> suffix_norm(n, 0.0f);
  if (suffix > 0) {
    for (size_t i = 0; i < n; ++i) {
      const float* v = vectors.row(i) + prefix;
      suffix_norm[i] = std::sqrt(SuffixDot(v, v, suffix)) * (1.0f + 1e-6f);
    }
    graph.best_resolved_from = options.min_threshold;
  }
  std::atomic<size_t> pruned_tiles{0};

  std::vector<Worker> workers(threads);
  std::atomic<size_t> next{0};
  std::atomic<size_t> pairs_found{0};
  std::atomic<bool> too_many{false};
  auto progress = env.StartProgress("similarity tiles", jobs.size());

  auto work = [&](Worker& w) {
    w.tile.resize(tile * tile);
    w.column_best.resize(tile);
    w.best.assign(n, -1.0f);
    for (;;) {
      size_t j = next.fetch_add(1);
      if (j >= jobs.size() || env.stop().requested() || too_many.load()) return;
      const TileJob& job = jobs[j];
      size_t a0 = job.a * tile, b0 = job.b * tile;
      size_t rows = std::min(tile, n - a0), cols = std::min(tile, n - b0);
      size_t before = w.pairs.size();
      const bool diagonal = job.a == job.b;
      // Adds dims [k0, k0+k) of the tile's products into the buffer (beta 0
      // starts it). On the diagonal, the upper triangle of A·Aᵀ only; the
      // lower half of the buffer is stale and never read.
      auto product = [&](size_t k0, size_t k, float beta) {
        if (diagonal) {
          cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, static_cast<int>(rows),
                      static_cast<int>(k), 1.0f, vectors.row(a0) + k0, static_cast<int>(d), beta,
                      w.tile.data(), static_cast<int>(cols));
        } else {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
                      static_cast<int>(cols), static_cast<int>(k), 1.0f, vectors.row(a0) + k0,
                      static_cast<int>(d), vectors.row(b0) + k0, static_cast<int>(d), beta,
                      w.tile.data(), static_cast<int>(cols));
        }
      };
      product(0, prefix, 0.0f);
      if (suffix > 0 && CollectCandidates(w, rows, cols, diagonal, &suffix_norm[a0],
                                          &suffix_norm[b0], floor,
                                          static_cast<size_t>(rows * cols * kCandidateShare))) {
        // Few cells can reach the threshold: finish only those.
        for (uint32_t cell : w.candidates) {
          size_t r = cell / cols, c = cell % cols;
          float score = w.tile[cell] + SuffixDot(vectors.row(a0 + r) + prefix,
                                                 vectors.row(b0 + c) + prefix, suffix);
          w.best[a0 + r] = std::max(w.best[a0 + r], score);
          w.best[b0 + c] = std::max(w.best[b0 + c], score);
          if (score >= options.min_threshold) {
            w.pairs.push_back(SimilarPair{static_cast<uint32_t>(a0 + r),
                                          static_cast<uint32_t>(b0 + c), score});
          }
        }
        pruned_tiles++;
      } else {
        if (suffix > 0) product(prefix, suffix, 1.0f);
        ScanTile(w, a0, rows, b0, cols, diagonal, options.min_threshold);
      }
      if (pairs_found.fetch_add(w.pairs.size() - before) + (w.pairs.size() - before) >
          options.max_pairs) {
        too_many = true;
      }
      progress->Advance();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, std::ref(workers[t]));
  work(workers[0]);
  for (auto& t : pool) t.join();
  progress->Finish();

  if (env.stop().requested()) return Status::Cancelled("stopped during the similarity search");
  if (too_many) {
    return Status::InvalidArgument("more than " + std::to_string(options.max_pairs) +
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
  graph.pruned_tiles = pruned_tiles;
  graph.prefix_dims = prefix;
  graph.tiles = jobs.size();
  return graph;
}

}  // namespace forge::dedup
