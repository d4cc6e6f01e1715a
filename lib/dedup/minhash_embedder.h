// A model-free alternative embedding for Jaccard similarity: MinHash over the
// character n-gram shingles of the normalised text, encoded so that the cosine
// of two vectors IS the MinHash estimate of their Jaccard similarity. The same
// exact/HNSW search and decision then work unchanged, with the threshold read
// as a Jaccard similarity (text-dedup and datasketch default to 0.7–0.8).
//
// Encoding (b-bit minwise hashing, Li & König 2010): each of `hashes` minimum
// hash values keeps its low `bits` bits, v in [0, B) with B = 2^bits, and
// becomes the centred one-hot block e_v − 1/B. Two blocks have dot product
// [v = v'] − 1/B and squared norm 1 − 1/B, so after scaling every vector to
// unit length the cosine is (matches/hashes − 1/B) / (1 − 1/B): the unbiased
// b-bit estimator of Jaccard similarity. dim = hashes × B.
#pragma once

#include <span>
#include <string_view>

namespace forge::dedup {

struct MinHashOptions {
  int n = 5;         // character n-gram shingles
  int hashes = 128;  // minimum hash values per text
  int bits = 3;      // bits kept of each (B = 8), so dim = 1024
  int dim() const { return hashes << bits; }
};

// Writes the encoded signature of text into out (out.size() == options.dim()).
// An empty text gives the zero vector.
void EmbedMinHash(std::string_view text, const MinHashOptions& options, std::span<float> out);

// The exact Jaccard similarity of the two texts' shingle sets (for tests).
double ShingleJaccard(std::string_view a, std::string_view b, int n);

}  // namespace forge::dedup
