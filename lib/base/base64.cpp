#include "base/base64.h"

#include <openssl/evp.h>

#include <algorithm>

namespace forge {

std::string Base64Encode(std::string_view bytes, bool url_safe) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(n);
  if (url_safe) {
    for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  std::string out(3 * (text.size() / 4) + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return Status::InvalidData("not base64");
  out.resize(n);
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++pad;
  out.resize(out.size() - std::min(pad, out.size()));
  return out;
}

}  // namespace forge
