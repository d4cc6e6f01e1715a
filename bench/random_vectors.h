// The vectors the dedup benchmarks search (bench-dedup_search, bench-hnsw_sweep),
// and the load line they print beside every figure.
#pragma once

#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "dedup/ngram_embedder.h"

// n unit vectors in d dimensions. Pure random vectors in 384-d have cosines
// near 0, so every tenth one is a noisy copy of an earlier one (cosine about
// 0.9-0.99): the search then has real pairs to find.
inline std::vector<float> MakeVectors(size_t n, size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n * d);
  for (size_t i = 0; i < n; ++i) {
    float* row = &x[i * d];
    if (i >= 10 && i % 10 == 0) {
      size_t source = rng() % i;
      float noise = 0.1f + 0.4f * static_cast<float>(rng() % 1000) / 1000.0f;
      for (size_t k = 0; k < d; ++k) row[k] = x[source * d + k] + noise * normal(rng) / std::sqrt(float(d));
    } else {
      for (size_t k = 0; k < d; ++k) row[k] = normal(rng);
    }
    forge::dedup::NormaliseL2(std::span<float>(row, d));
  }
  return x;
}

// The machine is shared: every figure is printed with the load it ran under.
inline std::string LoadAverage() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return "?";
  char buf[64] = {0};
  size_t got = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string s(buf, got);
  size_t third = s.find(' ', s.find(' ', s.find(' ') + 1) + 1);
  return "load average " + s.substr(0, third);
}
