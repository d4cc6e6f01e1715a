// Who calls (a call's first stage, call_handler_asio.h): the rollout whose secret
// the call presents, in the path (/r/<secret>/v1/...) or as its key.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "proxy/auth.h"
#include "proxy/outcome.h"

namespace forge::proxy {

struct Credentials {
  // /r/<rollout>/v1/...: a rollout's secret, or (with that rollout's secret
  // as the key, or any id with --open) its id.
  std::string path_rollout;
  std::string secret;  // the key: SecretOf's
};

// The key a request presents: Authorization's bearer token, else
// x-api-key, else x-goog-api-key.
std::string SecretOf(std::string_view authorization, std::string_view x_api_key, std::string_view x_goog_api_key);

// The rollout the call belongs to, into rollout; or why it is refused (401:
// no key, an unknown one, or an ended rollout's; 503: the store cannot
// say). open: --open, where a call without a known secret goes to rollout
// "anonymous" (or the path's id).
std::optional<Refusal> Attribute(const Credentials& credentials, SecretResolver& secrets, bool open,
                                 std::string& rollout);

}  // namespace forge::proxy
