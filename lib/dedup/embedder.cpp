#include "dedup/embedder.h"

namespace forge::dedup {

Result<Matrix> NgramEmbedder::Embed(const std::vector<std::string>& texts) {
  if (options_.dim < 1 || options_.n < 1) return Status::Usage("--dim and --ngram must be >= 1");
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
          {"normalise", "ascii-lowercase, whitespace collapsed"}, {"hash", "fnv1a64-signed"}};
}

}  // namespace forge::dedup
