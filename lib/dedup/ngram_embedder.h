// The model-free embedding: hashed character n-grams. Each distinct n-gram of
// the normalised text adds ±1 to one of `dim` buckets (the sign from another bit of
// the same hash, so collisions tend to cancel, as scikit-learn's
// HashingVectorizer does), and the vector is L2-normalised. The cosine of two
// such vectors approximates |A ∩ B| / sqrt(|A| |B|) of their n-gram sets: good for copies with
// edits, blind to paraphrase. It needs no model and is deterministic.
#pragma once

#include <span>
#include <string_view>

namespace forge::dedup {

struct NgramOptions {
  int n = 5;
  int dim = 1024;
};

// Writes the embedding of text into out (out.size() == options.dim).
void EmbedNgrams(std::string_view text, const NgramOptions& options, std::span<float> out);

// Scales v to unit length; a zero vector stays zero.
void NormaliseL2(std::span<float> v);

}  // namespace forge::dedup
