// Constructors of the client formats, one per wire API. format_registry.cpp
// lists them; nothing else needs to name a concrete format.
#pragma once

#include <memory>

#include "proxy/client_format.h"

namespace forge::proxy {

std::unique_ptr<ClientFormat> NewOpenAIChatFormat();
std::unique_ptr<ClientFormat> NewOpenAICompletionsFormat();
std::unique_ptr<ClientFormat> NewAnthropicFormat();
std::unique_ptr<ClientFormat> NewAnthropicCountTokensFormat();  // /v1/messages/count_tokens
// Every Responses format shares one process-wide ResponseStateStore, so a
// previous_response_id resolves whichever connection served the earlier call.
std::unique_ptr<ClientFormat> NewResponsesFormat();
// The proxy adds the URL's model and stream flag to the body (see GeminiFormat).
std::unique_ptr<ClientFormat> NewGeminiFormat();
std::unique_ptr<ClientFormat> NewGeminiCountTokensFormat();  // models/{m}:countTokens

}  // namespace forge::proxy
