#include "verify/verdict.h"

namespace forge::verify {

Json Verdict::ToJson() const {
  Json j = {{"outcome", OutcomeName(outcome)},
            {"passed", outcome == Outcome::kPassed},
            {"threshold", threshold}};
  const std::optional<double> trusted = TrustedReward();
  j["reward"] = trusted ? Json(*trusted) : Json(nullptr);
  if (Trusted()) {
    if (!rewards.empty()) j["rewards"] = rewards;
  } else {
    if (reward) j["claimed_reward"] = *reward;
    if (!rewards.empty()) j["claimed_rewards"] = rewards;
  }
  if (!verifier.empty()) j["verifier"] = verifier;
  if (timeout_sec > 0) j["timeout_sec"] = timeout_sec;
  j["seconds"] = seconds;
  if (exit_code) j["exit_code"] = *exit_code;
  if (!message.empty()) j["message"] = message;
  if (!log_tail.empty()) j["log"] = log_tail;
  if (!details.empty()) j["details"] = details;
  if (!sweep.empty()) j["sweep"] = sweep;
  if (!tamper.empty()) j["tamper"] = tamper;
  return j;
}

Outcome OutcomeForReward(double reward, double threshold) {
  return reward >= threshold - 1e-9 ? Outcome::kPassed : Outcome::kFailed;
}

}  // namespace forge::verify
