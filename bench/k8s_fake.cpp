// 1,000 pods through the fake Kubernetes API server (tests/fakes/), each one
// created, seen Running through the run's single watch, and deleted, with
// the client-side QPS limit on. Prints the achieved request rate next to the
// limit, the busiest second as the server saw it, and the same run without
// a limit (the fake server's own ceiling) as the baseline.
//
//   bench-k8s_fake [pods=1000] [qps=100] [threads=32]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "../tests/fakes/k8s_fake_server.h"
#include "cli/terminal_env.h"
#include "sandbox/k8s/k8s_backend.h"

namespace k8s = forge::sandbox::k8s;

namespace {

struct Figures {
  double seconds = 0;
  int64_t requests = 0;
  int failures = 0;
  int busiest_second = 0;
  int busiest_five = 0;  // seconds
  int64_t watches = 0, lists = 0, gets = 0;
};

Figures Run(int pods, double qps, int burst, int threads) {
  forge::testing::FakeK8s fake("bench-token", 0.02);
  k8s::K8sOptions options = fake.Options();
  options.qps = qps;
  options.burst = burst;
  options.start_timeout_seconds = 120;
  static forge::cli::TerminalEnv env("bench-k8s_fake");
  auto backend = k8s::MakeK8sBackend(options, env);
  if (!backend.ok()) {
    std::fprintf(stderr, "bench-k8s_fake: %s\n", backend.status().message().c_str());
    std::exit(69);
  }
  std::atomic<int> next{0}, failures{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i; (i = next++) < pods;) {
        forge::sandbox::Spec spec;
        spec.run_id = "bench";
        spec.rollout_id = "r" + std::to_string(i);
        spec.image = "busybox:1.36";
        spec.lifetime_seconds = 600;
        auto sandbox = (*backend)->Create(spec);
        if (!sandbox.ok() || !(*sandbox)->Release().ok()) {
          if (failures++ == 0 && !sandbox.ok()) {
            std::fprintf(stderr, "bench-k8s_fake: %s\n", sandbox.status().message().c_str());
          }
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  Figures f;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.requests = (*backend)->client().stats().requests.load();
  f.failures = failures;
  auto watch = (*backend)->watch_stats();
  f.watches = watch.watches;
  f.lists = watch.lists;

  // The busiest one-second window of requests, as the server saw them.
  nlohmann::json stats = fake.Stats();
  f.gets = stats["gets"].get<int64_t>();
  std::vector<double> times;
  for (const auto& entry : stats["log"]) times.push_back(entry[0].get<double>());
  std::sort(times.begin(), times.end());
  auto busiest = [&](double window) {
    int most = 0;
    for (size_t lo = 0, hi = 0; hi < times.size(); ++hi) {
      while (times[hi] - times[lo] >= window) ++lo;
      most = std::max(most, static_cast<int>(hi - lo + 1));
    }
    return most;
  };
  f.busiest_second = busiest(1.0);
  f.busiest_five = busiest(5.0);
  return f;
}

void Print(const char* name, int pods, const Figures& f, double qps, int burst) {
  std::string limit = qps > 0 ? std::to_string(static_cast<int>(qps)) + "/s+" +
                                    std::to_string(burst)
                              : "none";
  std::printf("%-20s %6d %8.2f %9lld %11.1f %10s %11d %8lld %5lld %5d\n", name, pods, f.seconds,
              static_cast<long long>(f.requests), f.requests / f.seconds, limit.c_str(),
              f.busiest_second, static_cast<long long>(f.watches),
              static_cast<long long>(f.gets), f.failures);
}

}  // namespace

int main(int argc, char** argv) {
  int pods = argc > 1 ? std::atoi(argv[1]) : 1000;
  double qps = argc > 2 ? std::atof(argv[2]) : 100;
  int threads = argc > 3 ? std::atoi(argv[3]) : 32;
  int burst = 10;
  std::printf("k8s backend against the fake API server: %d pods each created, seen Running "
              "through the run's watch, and deleted; %d threads\n\n", pods, threads);
  std::printf("%-20s %6s %8s %9s %11s %10s %11s %8s %5s %5s\n", "run", "pods", "seconds",
              "requests", "achieved/s", "limit", "busiest 1s", "watches", "GETs", "fail");
  Figures limited = Run(pods, qps, burst, threads);
  Print("QPS limit on", pods, limited, qps, burst);
  Figures open = Run(pods, 0, burst, threads);
  Print("no limit (baseline)", pods, open, 0, burst);
  double achieved = limited.requests / limited.seconds;
  // A token bucket allows burst + qps * t requests in t seconds. The server's
  // busiest second may show a little more: requests queued in the client
  // arrive bunched by the server's own latency jitter.
  double allowed = burst + qps * limited.seconds;
  bool honoured = limited.requests <= allowed + 1;
  std::printf("\nachieved %.1f requests/s with a limit of %.0f/s, burst %d: %lld requests in "
              "%.2f s where the bucket allows %.0f: %s\n",
              achieved, qps, burst, static_cast<long long>(limited.requests), limited.seconds,
              allowed, honoured ? "limit honoured" : "LIMIT EXCEEDED");
  std::printf("busiest window at the server: %d requests in 1 s (limit + burst = %.0f), "
              "%d in 5 s (%.0f)\n",
              limited.busiest_second, qps + burst, limited.busiest_five, 5 * qps + burst);
  std::printf("pod phases came from %lld watch request(s) for %d pods; per-pod GETs: %lld\n",
              static_cast<long long>(limited.watches), pods,
              static_cast<long long>(limited.gets));
  return limited.failures == 0 && open.failures == 0 && honoured ? 0 : 1;
}
