#include "verify/outcome.h"

#include "base/enum_names.h"

namespace forge::verify {
namespace {

constexpr EnumNames<Outcome, 9> kNames = {{
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
  const std::string_view name = NameOf(kNames, outcome);
  return name.empty() ? "infra_error" : name;
}

std::optional<Outcome> ParseOutcome(std::string_view name) { return ValueOf(kNames, name); }

bool CountsAsTrial(Outcome outcome) {
  return outcome != Outcome::kInfraError && outcome != Outcome::kCancelled;
}

}  // namespace forge::verify
