// Whether a call may go on now (the admit stage, call_handler_asio.h), as the
// admin API sets it: a pause for a weight update (calls wait, or are
// refused with 429), --max-per-rollout, and the policy version calls are
// served by (stamped on each record at its start and end). The Server owns
// one; every call and the admin API share it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "proxy/metrics.h"
#include "proxy/outcome.h"

namespace forge::proxy {

class Admission {
 public:
  // max_per_rollout: --max-per-rollout (0: no cap, and no count kept).
  Admission(Metrics& metrics, int max_per_rollout, int64_t policy_version)
      : metrics_(metrics), max_per_rollout_(max_per_rollout), policy_version_(policy_version) {}

  // Why a call of rollout may not go on now: its rollout's cap reached, or a
  // pause that refuses calls. A pause that waits is the caller's to wait out.
  std::optional<Refusal> Admit(const std::string& rollout);

  // Counts a call in flight overall, and per rollout when there is a cap
  // to enforce, for as long as it lives.
  class InFlight {
   public:
    InFlight(Admission& admission, const std::string& rollout);
    ~InFlight();
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

   private:
    Admission& admission_;
    const bool per_rollout_;
    std::string rollout_;
  };

  // The admin API's.
  void Pause(bool reject) {
    pause_rejects_.store(reject);
    paused_.store(true);
  }
  void Resume() { paused_.store(false); }
  bool paused() const { return paused_.load(); }
  bool pause_rejects() const { return pause_rejects_.load(); }
  int64_t policy_version() const { return policy_version_.load(); }
  void set_policy_version(int64_t version) { policy_version_.store(version); }

 private:
  Metrics& metrics_;
  const int max_per_rollout_;
  std::atomic<bool> paused_{false};
  std::atomic<bool> pause_rejects_{false};
  std::atomic<int64_t> policy_version_;
  std::mutex mutex_;
  std::map<std::string, int> in_flight_;  // by rollout, with a cap only
};

}  // namespace forge::proxy
