#include "base/json_parse.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/json_scan.h"

namespace forge {
namespace {

using Json = nlohmann::json;

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// The string at s[i] (its opening quote), decoded; i moves past it.
std::string ReadString(std::string_view s, size_t& i) {
  size_t end = JsonStringEnd(s, i);
  std::string value = DecodeJsonString(s.substr(i + 1, end - i - 2));
  i = end;
  return value;
}

// The number at s[i]; i moves past it. nlohmann's types: an integer without
// a sign is unsigned, with one signed; either is a double when it does not
// fit 64 bits, as is any number with a fraction or an exponent.
Json ReadNumber(std::string_view s, size_t& i) {
  size_t start = i;
  bool integer = true;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.' || c == 'e' || c == 'E') {
      integer = false;
    } else if (!(c >= '0' && c <= '9') && c != '-' && c != '+') {
      break;
    }
  }
  const char* first = s.data() + start;
  const char* last = s.data() + i;
  if (integer) {
    if (*first == '-') {
      int64_t value = 0;
      if (auto [end, ec] = std::from_chars(first, last, value); ec == std::errc() && end == last) return value;
    } else {
      uint64_t value = 0;
      if (auto [end, ec] = std::from_chars(first, last, value); ec == std::errc() && end == last) return value;
    }
  }
  return JsonNumber(s.substr(start, i - start)).value_or(0.0);  // (valid text: always a number)
}

// Where the next member or element of container goes: for an object, the
// slot of the key at s[i] (i moves past its colon; a duplicate key's last
// value stays), for an array a new element.
Json* NextSlot(Json& container, std::string_view s, size_t& i) {
  if (!container.is_object()) return &container.emplace_back();
  std::string key = ReadString(s, i);
  i = SkipSpace(s, i) + 1;
  return &container[std::move(key)];
}

}  // namespace

std::optional<Json> ParseJson(std::string_view text, std::string* error, int max_depth) {
  if (auto why = JsonSyntaxError(text, nullptr, max_depth)) {
    if (error) *error = *why;
    return std::nullopt;
  }
  std::string_view s = text;
  size_t i = s.size() >= 3 && std::memcmp(s.data(), "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  Json root;
  // The objects and arrays being filled, innermost last (no recursion: the
  // validator lets any depth through). A pointer stays good while its
  // container is filled: a map's nodes never move, and an array is only
  // added to once the element before is complete.
  std::vector<Json*> open;
  Json* slot = &root;  // where the next value goes
  for (;;) {
    i = SkipSpace(s, i);
    switch (s[i]) {
      case '{':
      case '[': {
        bool object = s[i] == '{';
        *slot = object ? Json::object() : Json::array();
        i = SkipSpace(s, i + 1);
        if (s[i] == (object ? '}' : ']')) {
          ++i;
          break;
        }
        open.push_back(slot);
        slot = NextSlot(*slot, s, i);
        continue;
      }
      case '"':
        *slot = ReadString(s, i);
        break;
      case 't':
        *slot = true;
        i += 4;
        break;
      case 'f':
        *slot = false;
        i += 5;
        break;
      case 'n':
        *slot = nullptr;
        i += 4;
        break;
      default:
        *slot = ReadNumber(s, i);
    }
    // A value is complete: close what it completes, then on to the next
    // member or element.
    for (;;) {
      if (open.empty()) return std::optional<Json>(std::move(root));
      i = SkipSpace(s, i);
      if (s[i] != ',') {  // '}' or ']'
        ++i;
        open.pop_back();
        continue;
      }
      i = SkipSpace(s, i + 1);
      slot = NextSlot(*open.back(), s, i);
      break;
    }
  }
}

}  // namespace forge
