#include "dedup/minhash_embedder.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "dedup/text.h"

namespace forge::dedup {

namespace {

// splitmix64's finaliser: a fixed, well-mixed 64-bit permutation.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t HashShingle(std::string_view s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return Mix(h);
}

// The distinct shingle hashes of the normalised text.
std::vector<uint64_t> Shingles(std::string_view text, int n) {
  std::string normal = Normalise(text);
  std::vector<uint64_t> out;
  size_t width = static_cast<size_t>(std::max(1, n));
  if (normal.empty()) return out;
  if (normal.size() <= width) {
    out.push_back(HashShingle(normal));
  } else {
    for (size_t i = 0; i + width <= normal.size(); ++i) {
      out.push_back(HashShingle(std::string_view(normal).substr(i, width)));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

void EmbedMinHash(std::string_view text, const MinHashOptions& options, std::span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  std::vector<uint64_t> shingles = Shingles(text, options.n);
  if (shingles.empty()) return;
  const size_t buckets = size_t{1} << options.bits;
  const float centre = 1.0f / static_cast<float>(buckets);
  // Every block has squared norm 1 - 1/B; scale the whole vector to unit length.
  const float scale =
      1.0f / std::sqrt(static_cast<float>(options.hashes) * (1.0f - centre));
  for (int k = 0; k < options.hashes; ++k) {
    // The k-th hash function: the shingle hash re-mixed with a per-k seed.
    const uint64_t seed = Mix(0x5eedull + static_cast<uint64_t>(k));
    uint64_t lowest = UINT64_MAX;
    for (uint64_t s : shingles) lowest = std::min(lowest, Mix(s ^ seed));
    // Low bits of a min are biased toward 0; take them from a re-mix.
    size_t value = static_cast<size_t>(Mix(lowest) & (buckets - 1));
    float* block = out.data() + static_cast<size_t>(k) * buckets;
    for (size_t b = 0; b < buckets; ++b) block[b] = -centre * scale;
    block[value] += scale;
  }
}

double ShingleJaccard(std::string_view a, std::string_view b, int n) {
  std::vector<uint64_t> x = Shingles(a, n), y = Shingles(b, n);
  std::vector<uint64_t> both;
  std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(both));
  size_t either = x.size() + y.size() - both.size();
  return either == 0 ? 1.0 : static_cast<double>(both.size()) / either;
}

}  // namespace forge::dedup
