// Harbor's env templates: a value of [environment.env], [verifier.env] or
// [solution.env] may name host environment variables as ${VAR} or
// ${VAR:-default}; they are resolved on the host when the task runs, never
// at load time, so a record holds the template and never the secret.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/env.h"
#include "base/status.h"

namespace forge::tasks {

// Looks a variable up; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
// The host's variables: those env was given (env must outlive the lookup).
EnvLookup HostEnvLookup(const Env& env);

// Every ${VAR} / ${VAR:-default} in every value replaced. A variable that is
// unset and has no default is a BadConfig error naming it and where it was
// asked for ("verifier.env.JUDGE_KEY: environment variable 'JUDGE_KEY' not
// found in host environment"); a malformed template is a InvalidData.
Result<std::map<std::string, std::string>> ResolveEnvTemplates(
    const std::map<std::string, std::string>& env, const std::string& field, const EnvLookup& lookup);

// The syntax check alone (no lookup), for load time: InvalidData naming the key.
Status CheckEnvTemplates(const std::map<std::string, std::string>& env, const std::string& field);

}  // namespace forge::tasks
