#include "proxy/admission.h"

namespace forge::proxy {

std::optional<Refusal> Admission::Admit(const std::string& rollout) {
  if (max_per_rollout_ > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_flight_.find(rollout);
    if (it != in_flight_.end() && it->second >= max_per_rollout_) {
      Refusal refusal{429, "rollout " + rollout + " already has " + std::to_string(it->second) +
                               " calls in flight (--max-per-rollout)", {}};
      refusal.headers.emplace_back("Retry-After", "1");
      return refusal;
    }
  }
  // Paused for a weight update: tell the client to come back (or wait: the caller's).
  if (!paused_.load() || !pause_rejects_.load()) return std::nullopt;
  Refusal refusal{429, "paused for a policy update; retry shortly", {}};
  refusal.headers.emplace_back("Retry-After", "2");
  refusal.headers.emplace_back("X-Forge-Paused", "1");
  return refusal;
}

Admission::InFlight::InFlight(Admission& admission, const std::string& rollout)
    : admission_(admission), per_rollout_(admission.max_per_rollout_ > 0) {
  admission_.metrics_.in_flight.fetch_add(1);
  if (!per_rollout_) return;
  rollout_ = rollout;
  std::lock_guard<std::mutex> lock(admission_.mutex_);
  ++admission_.in_flight_[rollout_];
}

Admission::InFlight::~InFlight() {
  admission_.metrics_.in_flight.fetch_sub(1);
  if (!per_rollout_) return;
  std::lock_guard<std::mutex> lock(admission_.mutex_);
  if (--admission_.in_flight_[rollout_] == 0) admission_.in_flight_.erase(rollout_);
}

}  // namespace forge::proxy
