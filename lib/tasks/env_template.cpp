#include "tasks/env_template.h"

#include <cctype>
#include <cstdlib>

namespace forge::tasks {
namespace {

bool IsName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Resolves one value; lookup null only checks the syntax.
Result<std::string> ResolveValue(const std::string& value, const std::string& where, const EnvLookup* lookup) {
  std::string out;
  size_t pos = 0;
  while (pos < value.size()) {
    const size_t start = value.find("${", pos);
    if (start == std::string::npos) break;
    out.append(value, pos, start - pos);
    const size_t end = value.find('}', start);
    if (end == std::string::npos) return Status::InvalidData(where + ": unterminated ${ in \"" + value + "\"");
    const std::string inner = value.substr(start + 2, end - start - 2);
    const size_t sep = inner.find(":-");
    const std::string name = inner.substr(0, sep);
    if (!IsName(name)) {
      return Status::InvalidData(where + ": \"${" + inner + "}\" is not ${VAR} or ${VAR:-default}");
    }
    if (lookup != nullptr) {
      std::optional<std::string> found = (*lookup)(name);
      if (!found && sep == std::string::npos) {
        return Status::BadConfig(where + ": environment variable '" + name + "' not found in host environment");
      }
      out += found ? *found : inner.substr(sep + 2);
    }
    pos = end + 1;
  }
  out.append(value, pos, std::string::npos);
  return out;
}

}  // namespace

EnvLookup HostEnvLookup(const Env& env) {
  return [&env](const std::string& name) { return env.Var(name); };
}

Result<std::map<std::string, std::string>> ResolveEnvTemplates(const std::map<std::string, std::string>& env,
                                                               const std::string& field, const EnvLookup& lookup) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : env) {
    auto resolved = ResolveValue(value, field + "." + key, &lookup);
    if (!resolved.ok()) return resolved.status();
    out[key] = std::move(*resolved);
  }
  return out;
}

Status CheckEnvTemplates(const std::map<std::string, std::string>& env, const std::string& field) {
  for (const auto& [key, value] : env) {
    auto checked = ResolveValue(value, field + "." + key, nullptr);
    if (!checked.ok()) return checked.status();
  }
  return Status::Ok();
}

}  // namespace forge::tasks
