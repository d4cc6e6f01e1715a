#include "dedup/embedder.h"

namespace forge::dedup {

Result<Matrix> NgramEmbedder::Embed(const std::vector<std::string>& texts) {
  if (options_.dim < 1 || options_.n < 1) return Status::InvalidArgument("--dim and --ngram must be >= 1");
  Matrix m;
  m.rows = texts.size();
  m.dim = static_cast<size_t>(options_.dim);
  m.data.assign(m.rows * m.dim, 0.0f);
  for (size_t i = 0; i < texts.size(); ++i) {
    EmbedNgrams(texts[i], options_, std::span<float>(m.data.data() + i * m.dim, m.dim));
  }
  return m;
}

records::Json NgramEmbedder::Provenance() const {
  return {{"kind", "ngram"}, {"ngram", options_.n}, {"dim", options_.dim},
          {"normalise", "ascii-lowercase, whitespace collapsed"}, {"hash", "fnv1a64-signed"},
          {"weights", "presence (each distinct n-gram once)"}};
}

Result<Matrix> MinHashEmbedder::Embed(const std::vector<std::string>& texts) {
  if (options_.n < 1 || options_.hashes < 1 || options_.bits < 1 || options_.bits > 8) {
    return Status::InvalidArgument("--ngram and --minhash-hashes must be >= 1, bits in [1, 8]");
  }
  Matrix m;
  m.rows = texts.size();
  m.dim = static_cast<size_t>(options_.dim());
  m.data.assign(m.rows * m.dim, 0.0f);
  for (size_t i = 0; i < texts.size(); ++i) {
    EmbedMinHash(texts[i], options_, std::span<float>(m.data.data() + i * m.dim, m.dim));
  }
  return m;
}

records::Json MinHashEmbedder::Provenance() const {
  return {{"kind", "minhash"}, {"ngram", options_.n}, {"hashes", options_.hashes},
          {"bits", options_.bits}, {"dim", options_.dim()},
          {"similarity", "estimated Jaccard of character n-gram shingles"},
          {"normalise", "ascii-lowercase, whitespace collapsed"}};
}

}  // namespace forge::dedup
