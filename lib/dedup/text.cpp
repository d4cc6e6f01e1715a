#include "dedup/text.h"

#include <openssl/evp.h>

#include <cctype>
#include <charconv>

namespace forge::dedup {

const records::Json* FindPath(const records::Json& record, std::string_view path) {
  const records::Json* node = &record;
  while (!path.empty()) {
    size_t dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    if (node->is_object()) {
      auto it = node->find(std::string(part));
      if (it == node->end()) return nullptr;
      node = &*it;
    } else if (node->is_array()) {
      size_t index = 0;
      auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (ec != std::errc() || end != part.data() + part.size() || index >= node->size()) {
        return nullptr;
      }
      node = &(*node)[index];
    } else {
      return nullptr;
    }
  }
  return node;
}

static std::string AsText(const records::Json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump(-1, ' ', false, records::Json::error_handler_t::replace);
}

std::optional<std::string> ExtractText(const records::Json& record,
                                       const std::vector<std::string>& fields,
                                       const std::string& id_field) {
  if (fields.empty()) {
    records::Json copy = record;
    if (copy.is_object()) copy.erase(id_field);
    return AsText(copy);
  }
  std::string text;
  bool found = false;
  for (const std::string& field : fields) {
    const records::Json* value = FindPath(record, field);
    if (value == nullptr || value->is_null()) continue;
    if (found) text += '\n';
    text += AsText(*value);
    found = true;
  }
  if (!found) return std::nullopt;
  return text;
}

std::optional<std::string> ExtractId(const records::Json& record, const std::string& id_field) {
  const records::Json* value = FindPath(record, id_field);
  if (value == nullptr || value->is_null()) return std::nullopt;
  return AsText(*value);
}

std::string Normalise(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (unsigned char c : text) {
    if (std::isspace(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

std::string ContentHash(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace forge::dedup
