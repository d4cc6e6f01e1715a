#include "dedup/ngram_embedder.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dedup/text.h"

namespace forge::dedup {

// FNV-1a, then a final mix so that the low bits used for the bucket are well
// spread; fixed here so that vectors are the same on every machine and run.
static uint64_t HashBytes(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

void EmbedNgrams(std::string_view text, const NgramOptions& options, std::span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  std::string normal = Normalise(text);
  size_t n = static_cast<size_t>(std::max(1, options.n));
  if (normal.empty()) return;
  // Each distinct n-gram counts once: with counts, n-grams a text repeats
  // (boilerplate, indentation, a name on every line) dominate the cosine and
  // make unrelated texts of one kind look alike. With presence the cosine is
  // |A ∩ B| / sqrt(|A| |B|) of the two n-gram sets (up to hash collisions).
  std::vector<uint64_t> hashes;
  if (normal.size() <= n) {
    hashes.push_back(HashBytes(normal));
  } else {
    hashes.reserve(normal.size() - n + 1);
    for (size_t i = 0; i + n <= normal.size(); ++i) {
      hashes.push_back(HashBytes(std::string_view(normal).substr(i, n)));
    }
  }
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  for (uint64_t h : hashes) {
    size_t bucket = static_cast<size_t>((h >> 1) % out.size());
    out[bucket] += (h & 1) ? 1.0f : -1.0f;
  }
  NormaliseL2(out);
}

void NormaliseL2(std::span<float> v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0) return;
  float scale = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= scale;
}

}  // namespace forge::dedup
