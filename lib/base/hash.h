// Content hashes: SHA-256 in lowercase hex. Used for content-addressed blobs,
// rollout secrets (only their hashes are stored) and cache keys.
#pragma once

#include <string>
#include <string_view>

namespace forge {

std::string Sha256Hex(std::string_view data);

// n random bytes from the OS, hex encoded (2n characters).
std::string RandomHex(size_t bytes);

}  // namespace forge
