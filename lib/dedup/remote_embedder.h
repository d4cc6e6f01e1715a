// Vectors from an OpenAI-compatible POST /v1/embeddings endpoint (vLLM, TEI,
// Ollama, llama.cpp): texts go in batches (TEI accepts 32 per request by
// default) over several connections at once; a 5xx, 429 or connection failure
// is retried with exponential backoff; every vector is renormalised, since
// servers differ on whether they normalise. Vectors are cached by content hash
// and model, so a second run over the same texts asks the endpoint nothing.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/env.h"
#include "dedup/embedder.h"

namespace forge::store {
class Store;
}

namespace forge::dedup {

// Where embeddings are remembered between runs.
class EmbeddingCache {
 public:
  virtual ~EmbeddingCache() = default;
  virtual Result<std::optional<std::vector<float>>> Get(const std::string& content_hash,
                                                        const std::string& model) = 0;
  virtual Status Put(const std::string& model,
                     const std::vector<std::pair<std::string, std::vector<float>>>& items) = 0;
};

// The store's embeddings table.
class StoreEmbeddingCache : public EmbeddingCache {
 public:
  explicit StoreEmbeddingCache(store::Store* store) : store_(store) {}
  Result<std::optional<std::vector<float>>> Get(const std::string& content_hash,
                                                const std::string& model) override;
  Status Put(const std::string& model,
             const std::vector<std::pair<std::string, std::vector<float>>>& items) override;

 private:
  store::Store* store_;
};

struct RemoteOptions {
  std::string url;    // base ("http://host:port"), ".../v1", or the full ".../embeddings"
  std::string model;
  size_t batch = 32;
  int concurrency = 4;
  int retries = 4;            // further attempts after the first
  int backoff_ms = 250;       // doubled after each failed attempt
  int timeout_seconds = 120;  // per request
  std::string api_key;        // sent as a bearer token when set
};

class RemoteEmbedder : public Embedder {
 public:
  // cache may be null (nothing remembered). Progress and the stop come from
  // env, which must outlive the embedder.
  RemoteEmbedder(RemoteOptions options, EmbeddingCache* cache, Env& env);
  Result<Matrix> Embed(const std::vector<std::string>& texts) override;
  records::Json Provenance() const override;

  size_t requests() const { return requests_; }
  size_t cache_hits() const { return cache_hits_; }

 private:
  // One batch: the vectors in input order, or why not.
  Result<std::vector<std::vector<float>>> Fetch(void* curl, const std::vector<std::string>& inputs);

  RemoteOptions options_;
  std::string endpoint_;
  EmbeddingCache* cache_;
  Env& env_;
  size_t dim_ = 0;
  std::atomic<size_t> requests_{0};
  std::atomic<size_t> retried_{0};
  size_t cache_hits_ = 0;
};

// Full endpoint URL from what the user gave.
std::string EmbeddingsEndpoint(const std::string& url);

// Reads an OpenAI embeddings response for `count` inputs; vectors in input
// order, renormalised. A wrong shape is a Protocol error saying what is wrong.
Result<std::vector<std::vector<float>>> ParseEmbeddingsResponse(const std::string& body,
                                                                size_t count);

}  // namespace forge::dedup
