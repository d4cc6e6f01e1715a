// Constructors of the client formats, one per wire API. format_registry.cpp
// lists them; nothing else needs to name a concrete format.
#pragma once

#include <memory>

#include "proxy/client_format.h"

namespace forge::proxy {

std::unique_ptr<ClientFormat> NewOpenAIChatFormat();
std::unique_ptr<ClientFormat> NewOpenAICompletionsFormat();

}  // namespace forge::proxy
