#include "dedup/remote_embedder.h"

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "dedup/text.h"
#include "store/store.h"

namespace forge::dedup {

Result<std::optional<std::vector<float>>> StoreEmbeddingCache::Get(const std::string& content_hash,
                                                                   const std::string& model) {
  return store_->embeddings().Get(content_hash, model);
}

Status StoreEmbeddingCache::Put(const std::string& model,
                                const std::vector<std::pair<std::string, std::vector<float>>>& items) {
  return store_->embeddings().Put(model, items);
}

std::string EmbeddingsEndpoint(const std::string& url) {
  std::string u = url;
  while (!u.empty() && u.back() == '/') u.pop_back();
  auto ends_with = [&](std::string_view s) {
    return u.size() >= s.size() && u.compare(u.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("/embeddings")) return u;
  if (ends_with("/v1")) return u + "/embeddings";
  return u + "/v1/embeddings";
}

Result<std::vector<std::vector<float>>> ParseEmbeddingsResponse(const std::string& body,
                                                                size_t count) {
  auto fail = [&](const std::string& what) {
    std::string head = body.substr(0, 200);
    return Status::Protocol("malformed embeddings response: " + what + " (body starts: " + head +
                            ")");
  };
  records::Json j = records::Json::parse(body, nullptr, false);
  if (j.is_discarded()) return fail("not JSON");
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) {
    return fail("no \"data\" array");
  }
  const auto& data = j["data"];
  if (data.size() != count) {
    return fail("expected " + std::to_string(count) + " embeddings, got " +
                std::to_string(data.size()));
  }
  std::vector<std::vector<float>> out(count);
  for (size_t k = 0; k < data.size(); ++k) {
    const auto& item = data[k];
    size_t index = k;
    if (item.contains("index")) {
      if (!item["index"].is_number_unsigned() || item["index"].get<size_t>() >= count) {
        return fail("bad index in data[" + std::to_string(k) + "]");
      }
      index = item["index"].get<size_t>();
    }
    if (!item.contains("embedding") || !item["embedding"].is_array() || item["embedding"].empty()) {
      return fail("data[" + std::to_string(k) + "] has no embedding array");
    }
    if (!out[index].empty()) return fail("index " + std::to_string(index) + " given twice");
    std::vector<float>& v = out[index];
    for (const auto& x : item["embedding"]) {
      if (!x.is_number()) return fail("non-number in data[" + std::to_string(k) + "].embedding");
      v.push_back(x.get<float>());
    }
    if (v.size() != out[0].size() && !out[0].empty()) return fail("embeddings of different sizes");
    double norm = 0;
    for (float x : v) norm += double(x) * x;
    if (!(norm > 0) || !std::isfinite(norm)) return fail("zero or non-finite vector");
    NormaliseL2(v);
  }
  return out;
}

namespace {

size_t AppendBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

struct CurlHandle {
  CURL* curl = curl_easy_init();
  ~CurlHandle() { curl_easy_cleanup(curl); }
};

}  // namespace

RemoteEmbedder::RemoteEmbedder(RemoteOptions options, EmbeddingCache* cache, Env& env)
    : options_(std::move(options)), endpoint_(EmbeddingsEndpoint(options_.url)), cache_(cache), env_(env) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

records::Json RemoteEmbedder::Provenance() const {
  return {{"kind", "endpoint"}, {"url", endpoint_},  {"model", options_.model},
          {"dim", dim_},        {"batch", options_.batch}, {"requests", requests_.load()},
          {"retried", retried_.load()}, {"cache_hits", cache_hits_}, {"renormalised", true}};
}

Result<std::vector<std::vector<float>>> RemoteEmbedder::Fetch(void* handle,
                                                              const std::vector<std::string>& inputs) {
  CURL* curl = static_cast<CURL*>(handle);
  std::string request = records::Json{{"model", options_.model},
                                      {"input", inputs},
                                      {"encoding_format", "float"}}
                            .dump(-1, ' ', false, records::Json::error_handler_t::replace);
  std::string last_error;
  for (int attempt = 0; attempt <= options_.retries; ++attempt) {
    if (attempt > 0) {
      ++retried_;
      int delay = options_.backoff_ms << std::min(attempt - 1, 10);
      env_.stop().WaitFor(std::chrono::milliseconds(delay));
    }
    if (env_.stop().requested()) return Status::Cancelled("stopped while fetching embeddings");
    std::string body;
    struct curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    std::string auth = "Authorization: Bearer " + options_.api_key;
    if (!options_.api_key.empty()) headers = curl_slist_append(headers, auth.c_str());
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, endpoint_.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(options_.timeout_seconds));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    ++requests_;
    if (rc != CURLE_OK) {
      last_error = curl_easy_strerror(rc);
      continue;
    }
    if (status >= 500 || status == 429) {
      last_error = "HTTP " + std::to_string(status) + ": " + body.substr(0, 200);
      continue;
    }
    if (status != 200) {
      return Status::Unavailable(endpoint_ + " refused the request (HTTP " +
                                 std::to_string(status) + "): " + body.substr(0, 300));
    }
    auto parsed = ParseEmbeddingsResponse(body, inputs.size());
    if (!parsed.ok()) return parsed.status().Prefixed(endpoint_);
    return parsed;
  }
  return Status::Unavailable(endpoint_ + ": gave up after " + std::to_string(options_.retries + 1) +
                             " attempts: " + last_error);
}

Result<Matrix> RemoteEmbedder::Embed(const std::vector<std::string>& texts) {
  if (options_.model.empty()) return Status::InvalidArgument("--embed-model is required with --embed-url");
  if (options_.batch == 0 || options_.concurrency < 1) {
    return Status::InvalidArgument("--embed-batch and --embed-concurrency must be >= 1");
  }
  // Each distinct text once: from the cache, else from the endpoint.
  std::vector<std::string> hashes(texts.size());
  std::unordered_map<std::string, std::vector<float>> vectors;
  std::vector<size_t> wanted;  // index of the first text with each missing hash
  for (size_t i = 0; i < texts.size(); ++i) {
    hashes[i] = ContentHash(texts[i]);
    if (vectors.count(hashes[i])) continue;
    std::optional<std::vector<float>> cached;
    if (cache_ != nullptr) {
      auto got = cache_->Get(hashes[i], options_.model);
      if (!got.ok()) return got.status();
      cached = std::move(*got);
    }
    if (cached) {
      ++cache_hits_;
      vectors[hashes[i]] = std::move(*cached);
    } else {
      vectors[hashes[i]] = {};
      wanted.push_back(i);
    }
  }

  std::vector<std::vector<size_t>> batches;
  for (size_t k = 0; k < wanted.size(); k += options_.batch) {
    batches.emplace_back(wanted.begin() + k, wanted.begin() + std::min(wanted.size(), k + options_.batch));
  }
  std::mutex mutex;  // guards vectors, the cache and the counters below
  Status failure;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto progress = env_.StartProgress("embeddings", wanted.size());
  auto work = [&] {
    CurlHandle handle;
    for (size_t b; !failed && (b = next.fetch_add(1)) < batches.size();) {
      std::vector<std::string> inputs;
      for (size_t i : batches[b]) inputs.push_back(texts[i]);
      auto got = Fetch(handle.curl, inputs);
      std::lock_guard<std::mutex> lock(mutex);
      if (!got.ok()) {
        if (!failed) failure = got.status();
        failed = true;
        return;
      }
      std::vector<std::pair<std::string, std::vector<float>>> fresh;
      for (size_t k = 0; k < inputs.size(); ++k) {
        fresh.emplace_back(hashes[batches[b][k]], (*got)[k]);
        vectors[hashes[batches[b][k]]] = std::move((*got)[k]);
      }
      if (cache_ != nullptr) {
        // Cached per batch, so an interrupted run keeps what it paid for.
        Status put = cache_->Put(options_.model, fresh);
        if (!put.ok()) {
          failure = put;
          failed = true;
          return;
        }
      }
      progress->Advance(inputs.size());
    }
  };
  std::vector<std::thread> pool;
  int threads = std::min<int>(options_.concurrency, static_cast<int>(batches.size()));
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  if (!batches.empty()) work();
  for (auto& t : pool) t.join();
  progress->Finish();
  if (failed) return failure;

  Matrix m;
  m.rows = texts.size();
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<float>& v = vectors[hashes[i]];
    if (m.dim == 0) m.dim = v.size();
    if (v.size() != m.dim) {
      return Status::Protocol(endpoint_ + ": embeddings of different sizes (" +
                              std::to_string(m.dim) + " and " + std::to_string(v.size()) +
                              "); a cache from another model version?");
    }
    m.data.insert(m.data.end(), v.begin(), v.end());
  }
  dim_ = m.dim;
  return m;
}

}  // namespace forge::dedup
