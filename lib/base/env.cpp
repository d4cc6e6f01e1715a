#include "base/env.h"

namespace forge {

Env::Env(std::map<std::string, std::string, std::less<>> vars) : vars_(std::move(vars)) {}

Env::~Env() = default;

std::optional<std::string> Env::Var(std::string_view name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

std::string Env::VarOr(std::string_view name, std::string_view fallback) const {
  auto it = vars_.find(name);
  return it == vars_.end() || it->second.empty() ? std::string(fallback) : it->second;
}

void Env::UnsetVar(std::string_view name) {
  if (auto it = vars_.find(name); it != vars_.end()) vars_.erase(it);
}

}  // namespace forge
