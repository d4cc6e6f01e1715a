// Where vectors come from: the model-free n-gram embedder, or an
// OpenAI-compatible /v1/embeddings endpoint. Either way the result is one
// unit vector per text, in the order given.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "dedup/minhash_embedder.h"
#include "dedup/ngram_embedder.h"
#include "records/jsonl.h"

namespace forge::dedup {

struct Matrix {
  std::vector<float> data;  // row-major
  size_t rows = 0;
  size_t dim = 0;
};

class Embedder {
 public:
  virtual ~Embedder() = default;
  virtual Result<Matrix> Embed(const std::vector<std::string>& texts) = 0;
  // Where the vectors came from, for the report (kind, model, dim, ...).
  virtual records::Json Provenance() const = 0;
};

class NgramEmbedder : public Embedder {
 public:
  explicit NgramEmbedder(NgramOptions options) : options_(options) {}
  Result<Matrix> Embed(const std::vector<std::string>& texts) override;
  records::Json Provenance() const override;

 private:
  NgramOptions options_;
};

// MinHash signatures encoded so that cosine = estimated Jaccard similarity.
class MinHashEmbedder : public Embedder {
 public:
  explicit MinHashEmbedder(MinHashOptions options) : options_(options) {}
  Result<Matrix> Embed(const std::vector<std::string>& texts) override;
  records::Json Provenance() const override;

 private:
  MinHashOptions options_;
};

}  // namespace forge::dedup
