#include "base/hash.h"

#include <openssl/evp.h>
#include <sys/random.h>

#include <cerrno>
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

// The kernel's CSPRNG: no state per thread (OpenSSL's RAND_bytes keeps a
// DRBG for each thread that draws from it, 2.5 KiB that stays with every
// forge-launch worker; bench/README.md, k8s rows).
void RandomBytes(void* out, size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    ssize_t got = ::getrandom(p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    // Only a kernel without getrandom gets here; there is no safe fallback for secrets.
    if (got <= 0) throw std::runtime_error("getrandom failed");
    p += got;
    n -= static_cast<size_t>(got);
  }
}

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
  RandomBytes(buffer.data(), bytes);
  return ToHex(buffer.data(), bytes);
}

uint64_t RandomSeed() {
  uint64_t seed = 0;
  RandomBytes(&seed, sizeof seed);
  return seed;
}

double RandomUnit() {
  uint64_t bits = 0;
  RandomBytes(&bits, sizeof bits);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace forge
