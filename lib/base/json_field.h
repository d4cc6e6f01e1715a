// Fields of JSON from outside (an upstream's answer, a client's request) read
// without trusting their type: "index" may be a string, a negative number or
// a fraction; "prompt_tokens" may be text; "stream" may be "yes". nlohmann's
// value<T>() throws on each. These readers never throw: a mistyped field is
// treated as absent, and the caller decides what absent means.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace forge {

// More choices or tool calls in one answer than any model sends: an index
// beyond it is skipped (a hostile upstream must not make the proxy allocate).
constexpr size_t kMaxStreamIndex = 1024;

// The "index" of a streamed choice or tool-call fragment: the non-negative
// integer at object[key] (0 when absent or null, as the OpenAI stream's first
// element), or nullopt for anything else (the element is then skipped).
inline std::optional<size_t> JsonIndex(const nlohmann::json& object, const char* key = "index") {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return size_t{0};
  if (it->is_number_unsigned()) return it->get<size_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return static_cast<size_t>(it->get<int64_t>());
  return std::nullopt;
}

// The integer at object[key], or fallback when object is not an object, the
// field is absent, or it is not a number. A fraction is truncated; a number
// beyond int64's range is the fallback.
inline int64_t JsonInt(const nlohmann::json& object, const char* key, int64_t fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (it->is_number_unsigned()) {
    uint64_t u = it->get<uint64_t>();
    return u <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(u) : fallback;
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    double d = it->get<double>();
    return std::isfinite(d) && std::fabs(d) < 9.2e18 ? static_cast<int64_t>(d) : fallback;
  }
  return fallback;
}

// True only when object[key] is the boolean true (a string "true" is not).
inline bool JsonTrue(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return false;
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

// The string at object[key], or fallback when it is absent or not a string.
inline std::string JsonText(const nlohmann::json& object, const char* key, std::string fallback = "") {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace forge
