#include "base/hash.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <vector>

namespace forge {
namespace {

std::string ToHex(const unsigned char* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

}  // namespace

std::string Sha256(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // Fetched once: EVP_sha256() looks the implementation up on every digest.
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_Digest(data.data(), data.size(), digest, &length, sha256 ? sha256 : EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string Sha256Hex(std::string_view data) { return Hex(Sha256(data)); }

std::string Hex(std::string_view bytes) {
  return ToHex(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string RandomHex(size_t bytes) {
  std::vector<unsigned char> buffer(bytes);
  if (RAND_bytes(buffer.data(), static_cast<int>(bytes)) != 1) {
    // Only a broken OpenSSL gets here; there is no safe fallback for secrets.
    throw std::runtime_error("RAND_bytes failed");
  }
  return ToHex(buffer.data(), bytes);
}

uint64_t RandomSeed() {
  uint64_t seed = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&seed), sizeof seed) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return seed;
}

}  // namespace forge
