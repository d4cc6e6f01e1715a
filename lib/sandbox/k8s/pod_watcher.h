// One watch per run: a thread lists the run's pods, then watches them from
// the list's resourceVersion, and hands each phase change to the wait
// parked on that pod. A watch that ends is reopened from the last
// resourceVersion seen; one that ends with 410 Gone (the server no longer
// has that history) is replaced by a fresh list and a new watch.
//
// A wait is state, not a thread: Park keeps what it waits for and what to
// call with the answer, keyed by pod name; the pod's events, a watch
// outage, and a ticker (stop requests, deadlines) decide it. WaitRunning
// blocks its caller on a parked wait.
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
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sandbox/k8s/image_pull_failure.h"

namespace forge::sandbox::k8s {

class ApiClient;

struct PodView {
  enum State { kWaiting, kRunning, kInfraError, kEnded, kDeleted };
  State state = kWaiting;
  std::string phase;
  std::string reason;  // why it is an infra error or ended, for messages
  // An infra error of the container's image: what the kubelet's words say
  // of the next try (image_pull_failure.h), and the image it named.
  PullFailure pull = PullFailure::kNone;
  std::string image;
  // The main container's own state (a supervised pod's harness: its
  // terminated exitCode and terminationMessage, and whether it is ready).
  bool terminated = false;
  int exit_code = -1;
  std::string message;
  bool ready = false;
};

// What a pod's status means for a rollout waiting on it.
PodView ClassifyPod(const nlohmann::json& pod, const std::string& container);

// The pods a list watches read at most: a relist pages them (the API's
// chunked lists, limit and continue, as client-go's reflector does), so it
// never holds every pod of thousands in flight at once.
inline constexpr int kListPage = 100;

// A page of a pod list (PodList) as the watch reads it: each pod's spec
// and metadata.managedFields, its largest parts, dropped as they are
// parsed (ClassifyPod reads only metadata and status). Throws
// nlohmann::json::exception on malformed JSON.
nlohmann::json ParsePodList(const std::string& body);

struct WatcherStats {
  std::atomic<int64_t> lists{0};
  std::atomic<int64_t> watches{0};
  std::atomic<int64_t> events{0};
  std::atomic<int64_t> gone{0};  // watches that ended with 410
};

class RunWatcher {
 public:
  using Clock = std::chrono::steady_clock;

  // nullopt to keep waiting, else the answer.
  using Decide = std::function<std::optional<Result<PodView>>(const PodView&)>;
  // Called once with the answer: on the watch's thread, the ticker's or
  // Park's caller's, never under the watcher's lock. It may Park again.
  using Wake = std::function<void(Result<PodView>)>;
  struct Wait {
    std::string what;  // "start", "end its command": for the deadline's message
    Clock::time_point deadline;
    std::function<bool()> stop_requested;  // may be empty; true ends the wait with Cancelled
    Decide decide;
  };

  // watch_outage: how long the watch may keep failing (each failure retried
  // with backoff) before the waits on it end as Unavailable.
  RunWatcher(ApiClient& client, std::string namespace_, std::string label_selector,
             std::string container, int watch_timeout_seconds,
             std::chrono::milliseconds watch_outage = std::chrono::seconds(60));
  ~RunWatcher();

  // Parks a wait on pod (one at a time per pod): wake gets the first of
  // decide's answer on the pod's latest view, Unavailable for a watch
  // outage, Cancelled once stop_requested, Unavailable at the deadline. The
  // view the watch has already seen is decided at once. Waits still parked
  // when the watcher ends get Cancelled.
  void Park(const std::string& pod, Wait wait, Wake wake);

  // The wait until the pod runs: its view once running; an infrastructure
  // error (unschedulable, image pull back-off, ...) is Unavailable.
  static Wait Running(const std::string& pod, Clock::time_point deadline, std::function<bool()> stop_requested);
  // The wait until the main container has terminated or, when held, is
  // ready (a supervised pod: the harness ended, box_protocol.h); a pod that
  // ends otherwise (evicted, deleted) is Unavailable.
  static Wait Done(const std::string& pod, bool held, Clock::time_point deadline,
                   std::function<bool()> stop_requested);

  // How many waits are parked.
  size_t parked();

  // Blocks its caller on Running's wait (a deadline is Unavailable;
  // stop_requested, which may be empty, is Cancelled): an exec'd sandbox's
  // Create. A pod-native run parks Running and Done instead.
  Result<PodView> WaitRunning(const std::string& pod, Clock::time_point deadline,
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
  // Blocks on a parked wait.
  Result<PodView> WaitFor(const std::string& pod, Wait wait);
  struct Parked {
    Wait wait;
    Wake wake;
  };
  using Woken = std::vector<std::pair<Wake, Result<PodView>>>;
  // The answer for a parked wait now, if it has one (mu_ held).
  std::optional<Result<PodView>> Decided(const std::string& pod, const Wait& wait, Clock::time_point now);
  // Moves the decided waits (all, or pod's only) into woken (mu_ held).
  void Sweep(const std::string* pod, Woken& woken);
  static void Call(Woken& woken);
  void Tick();  // the ticker's loop: stop requests, deadlines, a long outage

  ApiClient& client_;
  const std::string namespace_;
  const std::string selector_;
  const std::string container_;
  const int watch_timeout_;
  const std::chrono::milliseconds watch_outage_;
  std::string resource_version_;  // watcher thread only

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, PodView> pods_;
  // The one wait parked on each pod, decided by that pod's events only.
  std::map<std::string, Parked> parked_;
  int failures_ = 0;  // consecutive list/watch failures
  Clock::time_point failing_since_;  // the first of them
  std::string last_error_;
  WatcherStats stats_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::thread ticker_;
};

}  // namespace forge::sandbox::k8s
