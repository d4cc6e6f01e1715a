// The proxy's Prometheus metrics: plain atomics updated on the hot path and
// rendered as text on GET /metrics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace forge::proxy {

class Metrics {
 public:
  static constexpr std::array<double, 14> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                      0.25,  0.5,    1,     2.5,  5,    10,  30};
  std::atomic<int64_t> requests{0};         // every HTTP request
  std::atomic<int64_t> calls{0};            // model calls (routed to an upstream or replayed)
  std::atomic<int64_t> in_flight{0};        // model calls not yet finished
  std::atomic<int64_t> upstream_errors{0};  // connect failures, 5xx, cut streams, timeouts
  std::atomic<int64_t> client_errors{0};    // 4xx answered to clients
  std::atomic<int64_t> client_hangups{0};   // calls whose client left before the answer was done (recorded 499)
  std::atomic<int64_t> records_written{0};
  std::atomic<int64_t> records_failed{0};
  std::atomic<int64_t> store_lag_us{0};  // enqueue → commit of the last batch
  std::atomic<int64_t> store_queue{0};   // calls waiting for the writer
  std::atomic<int64_t> open_connections{0};
  std::atomic<int64_t> accept_errors{0};  // accept(2) failures: out of file descriptors, memory
  std::atomic<int64_t> malformed_requests{0};   // requests refused before routing (400/408/413/414/431)
  std::atomic<int64_t> calls_without_token_ids{0};  // answered 200 with no completion token ids from the upstream
  std::atomic<int64_t> upstream_retries{0};     // attempts repeated upstream (--upstream-retries)

  void ObserveLatency(double seconds);
  std::string Render() const;

 private:
  std::array<std::atomic<int64_t>, kBuckets.size() + 1> buckets_{};
  std::atomic<int64_t> latency_count_{0};
  std::atomic<int64_t> latency_sum_us_{0};
};

}  // namespace forge::proxy
