// Limits the proxy applies to a translated chat request before it goes
// upstream. Harnesses ask for what a hosted model allows (Claude Code:
// max_tokens 128000 for its default model, 32000 otherwise; Qwen Code 32768),
// which a policy server with a smaller context rejects with a 400 before
// generating anything (vLLM: max_tokens + prompt > max_model_len).
#pragma once

#include <cstdint>

#include "proxy/client_format.h"

namespace forge::proxy {

// Lowers max_tokens and max_completion_tokens to cap when they ask for more
// (a request without them is left to the server's default, which fits the
// context). cap <= 0 leaves the body as it is. Returns true when the body changed. The client's own request is
// recorded unchanged; the upstream request shows what was sent.
bool CapMaxTokens(Json& chat_body, int64_t cap);

}  // namespace forge::proxy
