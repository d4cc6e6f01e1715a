// Content hashes: SHA-256, as its 32 bytes (content-addressed blobs) or in
// lowercase hex (rollout secrets, of which only hashes are stored, and keys).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace forge {

std::string Sha256(std::string_view data);  // the digest's 32 bytes
std::string Sha256Hex(std::string_view data);
std::string Hex(std::string_view bytes);

// Random bytes from the kernel (getrandom): no state kept per thread, so
// the many threads of forge-launch hold none.
void RandomBytes(void* out, size_t n);
// n random bytes from the OS, hex encoded (2n characters).
std::string RandomHex(size_t bytes);
// A seed for a keyed hash (XXH3) that no client can predict.
uint64_t RandomSeed();
// Uniform in [0, 1), for backoff jitter.
double RandomUnit();

}  // namespace forge
