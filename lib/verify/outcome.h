// The typed outcome of one rollout's verification. Only `passed` and `failed`
// come from a verifier that ran to the end; the others say who is to blame
// when it did not, so metrics can count agent failures and leave out
// infrastructure failures instead of scoring both as zero.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace forge::verify {

enum class Outcome {
  kPassed,           // the reward reached the threshold
  kFailed,           // the reward stayed below it
  kAgentTimeout,     // the harness ran past its deadline (from forge-launch)
  kAgentError,       // the harness failed (from forge-launch)
  kVerifierError,    // the task's verifier crashed, wrote no reward, or wrote a bad one
  kVerifierTimeout,  // the task's verifier ran past its deadline
  kInfraError,       // sandbox lost, engine unreachable, store failure: nobody's answer
  kCancelled,        // stopped by a signal
  kTampered,         // the agent changed the verifier's toolchain, /tests or
                     // /logs/verifier (hardening.h): a failure, reported apart
};

std::string_view OutcomeName(Outcome outcome);
std::optional<Outcome> ParseOutcome(std::string_view name);

// Counts as a trial for pass@k: the agent had its chance and the verifier or
// the agent's own failure decided (tampered counts, as a failure). Infra
// errors and cancellations do not.
bool CountsAsTrial(Outcome outcome);

}  // namespace forge::verify
