#include "sandbox/sandbox.h"

namespace forge::sandbox {

std::string_view BackendName(BackendKind kind) {
  for (const auto& [k, name] : kBackendNames) {
    if (k == kind) return name;
  }
  return "";
}

std::optional<BackendKind> BackendKindOf(std::string_view name) {
  for (const auto& [kind, n] : kBackendNames) {
    if (n == name) return kind;
  }
  return std::nullopt;
}

}  // namespace forge::sandbox
