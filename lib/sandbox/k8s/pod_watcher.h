// One watch per run: a thread lists the run's pods, then watches them from
// the list's resourceVersion, and hands each phase change to whichever
// Create() is waiting for that pod. A watch that ends is reopened from the
// last resourceVersion seen; one that ends with 410 Gone (the server no
// longer has that history) is replaced by a fresh list and a new watch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::sandbox::k8s {

class ApiClient;

struct PodView {
  enum State { kWaiting, kRunning, kInfraError, kEnded, kDeleted };
  State state = kWaiting;
  std::string phase;
  std::string reason;  // why it is an infra error or ended, for messages
  // The main container's own state (a supervised pod's harness: its
  // terminated exitCode and terminationMessage, and whether it is ready).
  bool terminated = false;
  int exit_code = -1;
  std::string message;
  bool ready = false;
};

// What a pod's status means for a rollout waiting on it.
PodView ClassifyPod(const nlohmann::json& pod, const std::string& container);

struct WatcherStats {
  std::atomic<int64_t> lists{0};
  std::atomic<int64_t> watches{0};
  std::atomic<int64_t> events{0};
  std::atomic<int64_t> gone{0};  // watches that ended with 410
};

class RunWatcher {
 public:
  using Clock = std::chrono::steady_clock;

  RunWatcher(ApiClient& client, std::string namespace_, std::string label_selector,
             std::string container, int watch_timeout_seconds);
  ~RunWatcher();

  // Waits until the pod runs; an infrastructure error (unschedulable, image
  // pull back-off, ...) or the deadline comes back as Unavailable.
  // stop_requested (may be empty) ends the wait with Status::Cancelled.
  Result<PodView> WaitRunning(const std::string& pod, Clock::time_point deadline,
                              const std::function<bool()>& stop_requested);

  // Waits until the main container has terminated or, when held, is ready
  // (a supervised pod: the harness ended, box_protocol.h); a pod that ends
  // otherwise (evicted, deleted, deadline) or the deadline is Unavailable.
  Result<PodView> WaitDone(const std::string& pod, bool held, Clock::time_point deadline,
                           const std::function<bool()>& stop_requested);

  // Drops what the watch said about a pod that is gone for good.
  void Forget(const std::string& pod);

  // The latest view of a pod, if the watch has seen it.
  std::optional<PodView> Latest(const std::string& pod);

  const WatcherStats& stats() const { return stats_; }

 private:
  void Loop();
  bool List();           // false on error
  bool Watch();          // returns when the watch ends; false on error
  void Apply(const std::string& type, const nlohmann::json& pod);
  void Failed(const std::string& why);
  // decide: nullopt to keep waiting, else the answer.
  using Decide = std::function<std::optional<Result<PodView>>(const PodView&)>;
  Result<PodView> WaitFor(const std::string& pod, const char* what, Clock::time_point deadline,
                          const std::function<bool()>& stop_requested, const Decide& decide);

  ApiClient& client_;
  const std::string namespace_;
  const std::string selector_;
  const std::string container_;
  const int watch_timeout_;
  std::string resource_version_;  // watcher thread only

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, PodView> pods_;
  // The one rollout waiting on each pod, woken by that pod's events only.
  std::map<std::string, std::shared_ptr<std::condition_variable>> waiters_;
  int failures_ = 0;  // consecutive list/watch failures
  Clock::time_point failing_since_;  // the first of them
  std::string last_error_;
  WatcherStats stats_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace forge::sandbox::k8s
