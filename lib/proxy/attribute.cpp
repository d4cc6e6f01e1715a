#include "proxy/attribute.h"

#include <fmt/format.h>

namespace forge::proxy {

std::string SecretOf(std::string_view authorization, std::string_view x_api_key, std::string_view x_goog_api_key) {
  if (authorization.rfind("Bearer ", 0) == 0 && authorization.size() > 7) return std::string(authorization.substr(7));
  if (!x_api_key.empty()) return std::string(x_api_key);
  return std::string(x_goog_api_key);
}

std::optional<Refusal> Attribute(const Credentials& credentials, SecretResolver& secrets, bool open,
                                 std::string& rollout) {
  const std::string& path_rollout = credentials.path_rollout;
  const std::string& secret = credentials.secret;
  std::optional<SecretOwner> ended;  // a secret whose rollout is over: refused, and said so
  auto owner_of = [&](const std::string& candidate) -> Result<std::string> {
    auto resolved = secrets.Resolve(candidate);
    if (!resolved.ok()) return resolved.status();
    if (!resolved->has_value()) return std::string();
    if (!(*resolved)->ended.empty()) {
      ended = **resolved;
      return std::string();
    }
    return (*resolved)->rollout;
  };
  // The path's secret first, then the header's. (Pointers: copies of the
  // strings would cost two allocations a call.)
  const std::string* candidates[] = {&path_rollout, &secret};
  for (const std::string* candidate : candidates) {
    if (candidate->empty() || !rollout.empty()) continue;
    auto owner = owner_of(*candidate);
    if (!owner.ok()) return Refusal{503, "store unavailable: " + owner.status().message(), {}};
    rollout = std::move(*owner);
  }
  if (rollout.empty() && !path_rollout.empty()) {
    // /r/<rollout-id>/ with the rollout's secret as the key, or any id in --open mode.
    auto by_secret = owner_of(secret);
    if (open || (by_secret.ok() && *by_secret == path_rollout)) rollout = path_rollout;
  }
  if (rollout.empty() && ended) {
    return Refusal{401, fmt::format("rollout {} has {}: its secret is no longer accepted", ended->rollout,
                                    ended->ended == "finished" ? "finished" : "been cancelled"), {}};
  }
  if (rollout.empty() && open) rollout = "anonymous";
  if (rollout.empty()) {
    return Refusal{401, secret.empty() && path_rollout.empty()
                            ? "no API key: send the rollout's secret as the bearer token or x-api-key"
                            : "unknown rollout secret", {}};
  }
  return std::nullopt;
}

}  // namespace forge::proxy
