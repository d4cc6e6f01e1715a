// Base64 (RFC 4648), standard or URL-safe alphabet, through OpenSSL.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace forge {

std::string Base64Encode(std::string_view bytes, bool url_safe = false);
// Standard alphabet with padding; InvalidData when text is not base64.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace forge
