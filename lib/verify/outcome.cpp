#include "verify/outcome.h"

#include <array>
#include <utility>

namespace forge::verify {
namespace {

constexpr std::array<std::pair<Outcome, std::string_view>, 9> kNames = {{
    {Outcome::kPassed, "passed"},
    {Outcome::kFailed, "failed"},
    {Outcome::kAgentTimeout, "agent_timeout"},
    {Outcome::kAgentError, "agent_error"},
    {Outcome::kVerifierError, "verifier_error"},
    {Outcome::kVerifierTimeout, "verifier_timeout"},
    {Outcome::kInfraError, "infra_error"},
    {Outcome::kCancelled, "cancelled"},
    {Outcome::kTampered, "tampered"},
}};

}  // namespace

std::string_view OutcomeName(Outcome outcome) {
  for (const auto& [o, name] : kNames) {
    if (o == outcome) return name;
  }
  return "infra_error";
}

std::optional<Outcome> ParseOutcome(std::string_view name) {
  for (const auto& [o, n] : kNames) {
    if (n == name) return o;
  }
  return std::nullopt;
}

bool CountsAsTrial(Outcome outcome) {
  return outcome != Outcome::kInfraError && outcome != Outcome::kCancelled;
}

}  // namespace forge::verify
