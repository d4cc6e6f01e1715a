#include "proxy/metrics.h"

#include <fmt/format.h>

namespace forge::proxy {

void Metrics::ObserveLatency(double seconds) {
  size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  latency_count_.fetch_add(1, std::memory_order_relaxed);
  latency_sum_us_.fetch_add(static_cast<int64_t>(seconds * 1e6), std::memory_order_relaxed);
}

std::string Metrics::Render() const {
  std::string out;
  auto counter = [&](const char* name, const char* help, const char* type, int64_t v) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help, type, v);
  };
  counter("forge_proxy_requests_total", "HTTP requests received.", "counter", requests.load());
  counter("forge_proxy_calls_total", "Model calls served.", "counter", calls.load());
  counter("forge_proxy_in_flight", "Model calls in progress.", "gauge", in_flight.load());
  counter("forge_proxy_upstream_errors_total", "Upstream failures (connect, 5xx, cut stream, timeout).",
          "counter", upstream_errors.load());
  counter("forge_proxy_client_errors_total", "Requests answered with a 4xx.", "counter",
          client_errors.load());
  counter("forge_proxy_client_hangups_total",
          "Calls whose client hung up before the answer was done (recorded as 499; the upstream's work stopped).",
          "counter", client_hangups.load());
  counter("forge_proxy_records_written_total", "Calls moved from the call log into the database.", "counter",
          records_written.load());
  counter("forge_proxy_records_failed_total", "Calls the call log failed to take.", "counter",
          records_failed.load());
  counter("forge_proxy_store_queue", "Calls in the call log, not yet in the database.", "gauge", store_queue.load());
  counter("forge_proxy_open_connections", "Client connections open.", "gauge", open_connections.load());
  counter("forge_proxy_accept_errors_total",
          "Failed accepts (out of file descriptors or memory); the connection waits in the listen queue.", "counter",
          accept_errors.load());
  counter("forge_proxy_malformed_requests_total",
          "Requests refused before routing: malformed, too long a line or header, too large a body, too slow.",
          "counter", malformed_requests.load());
  counter("forge_proxy_calls_without_token_ids_total",
          "Calls the upstream answered without completion token ids (it ignores return_token_ids): useless for RL.",
          "counter", calls_without_token_ids.load());
  counter("forge_proxy_upstream_retries_total", "Upstream attempts the proxy repeated (--upstream-retries).",
          "counter", upstream_retries.load());
  out += fmt::format(
      "# HELP forge_proxy_store_lag_seconds Log-to-database time of the first call of the last batch.\n"
      "# TYPE forge_proxy_store_lag_seconds gauge\nforge_proxy_store_lag_seconds {:.6f}\n",
      static_cast<double>(store_lag_us.load()) / 1e6);
  out += "# HELP forge_proxy_call_latency_seconds Model call latency, request to last byte.\n"
         "# TYPE forge_proxy_call_latency_seconds histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += buckets_[i].load();
    out += fmt::format("forge_proxy_call_latency_seconds_bucket{{le=\"{}\"}} {}\n", kBuckets[i], cumulative);
  }
  cumulative += buckets_[kBuckets.size()].load();
  out += fmt::format("forge_proxy_call_latency_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("forge_proxy_call_latency_seconds_sum {:.6f}\n",
                     static_cast<double>(latency_sum_us_.load()) / 1e6);
  out += fmt::format("forge_proxy_call_latency_seconds_count {}\n", latency_count_.load());
  return out;
}

}  // namespace forge::proxy
