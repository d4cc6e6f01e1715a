// The "index" of a streamed choice or tool-call fragment, read without
// trusting its type: JSON from an upstream (or a client) may carry a string,
// a negative number or a fraction there, and nlohmann's value<int>() throws
// on each. Absent or null means 0, as the OpenAI stream's first element.
#pragma once
#include <cstddef>
#include <optional>

#include <nlohmann/json.hpp>

namespace forge {

// More choices or tool calls in one answer than any model sends: an index
// beyond it is skipped (a hostile upstream must not make the proxy allocate).
constexpr size_t kMaxStreamIndex = 1024;

// The non-negative integer at object[key] (0 when absent or null), or nullopt
// for anything else (the element is then skipped by the caller).
inline std::optional<size_t> JsonIndex(const nlohmann::json& object, const char* key = "index") {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return size_t{0};
  if (it->is_number_unsigned()) return it->get<size_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return static_cast<size_t>(it->get<int64_t>());
  return std::nullopt;
}

}  // namespace forge
