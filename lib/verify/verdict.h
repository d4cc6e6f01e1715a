// What verifying one rollout produced; becomes the record's "verdict" object.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "records/jsonl.h"
#include "verify/outcome.h"

namespace forge::verify {

using records::Json;

struct Verdict {
  Outcome outcome = Outcome::kInfraError;
  std::optional<double> reward;           // the number compared with the threshold
  std::map<std::string, double> rewards;  // named rewards (reward.json)
  double threshold = 1.0;
  std::string verifier;  // harbor, command, files, judge; empty when none ran
  double timeout_sec = 0;
  double seconds = 0;
  std::optional<int> exit_code;  // of test.sh or the command
  std::string message;           // why, for anything but passed/failed
  std::string log_tail;          // the end of the verifier's stdout and stderr ("log")
  Json details = Json::object(); // per-kind: file checks, judge answer, ...
  Json sweep = Json::object();   // what forge did before the verifier (hardening.h)
  Json tamper = Json::object();  // the tamper evidence (watch.h)

  // Only a verifier that ran to its end on a sandbox nobody tampered with
  // gives a reward: for any other outcome the reward is 0, and the number
  // the verifier wrote is kept as "claimed_reward" (and "claimed_rewards"),
  // for inspection only.
  bool Trusted() const { return outcome == Outcome::kPassed || outcome == Outcome::kFailed; }
  std::optional<double> TrustedReward() const { return Trusted() ? reward : std::optional<double>(0.0); }
  Json ToJson() const;
};

// Decides passed/failed from a reward: passed when reward >= threshold
// (allowing 1e-9 for floating-point noise in the reward file).
Outcome OutcomeForReward(double reward, double threshold);

}  // namespace forge::verify
