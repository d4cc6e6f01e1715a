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

namespace {

// The length in bytes of the UTF-8 space character (Unicode White_Space
// beyond ASCII: NEL, no-break space, ogham mark, en quad to hair space, line
// and paragraph separators, narrow no-break, medium mathematical and
// ideographic space) at the start of s; 0 when none starts there.
size_t UnicodeSpaceAt(std::string_view s) {
  auto byte = [&](size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0; };
  unsigned char a = byte(0), b = byte(1), c = byte(2);
  if (a == 0xC2 && (b == 0x85 || b == 0xA0)) return 2;
  if (a == 0xE1 && b == 0x9A && c == 0x80) return 3;
  if (a == 0xE2 && b == 0x80 && ((c >= 0x80 && c <= 0x8A) || c == 0xA8 || c == 0xA9 || c == 0xAF)) return 3;
  if (a == 0xE2 && b == 0x81 && c == 0x9F) return 3;
  if (a == 0xE3 && b == 0x80 && c == 0x80) return 3;
  return 0;
}

}  // namespace

std::string Normalise(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t space = std::isspace(c) ? 1 : c >= 0x80 ? UnicodeSpaceAt(text.substr(i)) : 0;
    if (space > 0) {
      pending_space = !out.empty();
      i += space;
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += static_cast<char>(std::tolower(c));
    ++i;
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
