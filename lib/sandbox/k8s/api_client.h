// HTTP to one Kubernetes API server through libcurl: authentication, TLS,
// the client-side rate limit, and retries. 429 waits for Retry-After (and
// holds back every other request too); 5xx and transport errors are retried
// with bounded exponential backoff; anything else goes back to the caller.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sandbox/k8s/options.h"
#include "sandbox/k8s/rate_limiter.h"

namespace forge::sandbox::k8s {

struct HttpResponse {
  long status = 0;
  std::string body;
};

struct ClientStats {
  std::atomic<int64_t> requests{0};     // sent, retries included
  std::atomic<int64_t> throttled{0};    // 429 answers
  std::atomic<int64_t> server_errors{0};  // 5xx answers
  std::atomic<int64_t> transport_errors{0};
};

class ApiClient {
 public:
  ApiClient(Cluster cluster, const K8sOptions& options);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  const Cluster& cluster() const { return cluster_; }
  RateLimiter& limiter() { return limiter_; }
  const ClientStats& stats() const { return stats_; }

  // One request, rate limited and retried; `what` names it in messages.
  Result<HttpResponse> Call(const std::string& method, const std::string& path,
                            const std::string& body, std::string_view what);

  // A streaming GET (watch, follow logs): on_line gets each line of the body
  // and returns false to stop; `stop` ends it from another thread. Returns
  // the HTTP status; a non-2xx body is delivered through on_line too.
  Result<long> Stream(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                      const std::atomic<bool>& stop);

  // TLS and client certificate settings, for connections made elsewhere.
  void ConfigureTls(CURL* curl) const;
  // The bearer token, re-read from its file once a minute (projected
  // service-account tokens rotate on disk).
  std::string Token();

  std::string Url(const std::string& path) const { return cluster_.server + path; }
  static std::string Escape(std::string_view s);

 private:
  CURL* TakeHandle();
  void ReturnHandle(CURL* curl);
  double Backoff(int attempt) const;

  Cluster cluster_;
  const int max_retries_;
  const double max_backoff_;
  RateLimiter limiter_;
  ClientStats stats_;
  std::mutex mu_;
  // At most kConnections handles, each with its one kept-alive connection,
  // shared by every caller: a request waits for a free one (rollouts in
  // flight outnumber requests in flight; client-go multiplexes all of a
  // client's requests over one HTTP/2 connection).
  static constexpr int kConnections = 32;
  std::condition_variable handle_free_;
  std::vector<CURL*> idle_;
  int handles_ = 0;  // made, idle or in use
  std::string token_;
  int64_t token_read_at_ = 0;
};

// A Status for an unexpected answer, carrying the server's own message from
// its metav1.Status body when there is one.
Status ApiError(const HttpResponse& response, std::string_view what);

// A response's body as JSON; Protocol naming `what` when it is not.
Result<nlohmann::json> ParseJsonBody(const HttpResponse& response, std::string_view what);

}  // namespace forge::sandbox::k8s
