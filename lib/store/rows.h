// Values into and out of the tables' rows: binding a statement's parameters
// in one call, and the conversions every table makes (timestamps, JSON
// records, empty-as-NULL), so no table repeats SQLite boilerplate.
#pragma once

#include <concepts>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "store/sqlite.h"

namespace forge::store {

// Seconds since the epoch, as the tables' created_at and updated_at hold it.
double Now();

// A stored JSON record (ReadStoredJson); null when empty or unreadable.
nlohmann::json ParseJsonOrNull(const std::string& text);

// For columns where absent is NULL: the text, or nothing when it is empty.
inline std::optional<std::string_view> TextOrNull(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return text;
}
// The record's text, or nothing when it is null.
std::optional<std::string> JsonOrNull(const nlohmann::json& record);

inline void BindOne(Statement& s, int index, std::string_view text) { s.Bind(index, text); }
inline void BindOne(Statement& s, int index, double value) { s.Bind(index, value); }
template <std::integral T>
void BindOne(Statement& s, int index, T value) {
  s.Bind(index, static_cast<int64_t>(value));
}
inline void BindOne(Statement& s, int index, std::nullopt_t) { s.BindNull(index); }
template <typename T>
void BindOne(Statement& s, int index, const std::optional<T>& value) {
  if (value) BindOne(s, index, *value); else s.BindNull(index);
}

// Binds values to ?1, ?2, ... in order (text, numbers, an empty optional as NULL).
template <typename... Values>
Statement& BindAll(Statement& s, const Values&... values) {
  int index = 0;
  (BindOne(s, ++index, values), ...);
  return s;
}

}  // namespace forge::store
