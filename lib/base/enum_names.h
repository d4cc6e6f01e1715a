// An enum's names as one table of (value, name) pairs, looked up both ways:
// how a flag, a record field or a profile key names a value, and how the
// code turns that name into the enum (instead of comparing strings).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace forge {

template <typename E, size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

// The value's name; empty for a value the table lacks.
template <typename E, size_t N>
constexpr std::string_view NameOf(const EnumNames<E, N>& names, E value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return {};
}

// The named value; nullopt for a name the table lacks.
template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const EnumNames<E, N>& names, std::string_view name) {
  for (const auto& [v, n] : names) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// "a, b, c": the names, for a message listing what is accepted.
template <typename E, size_t N>
std::string NameList(const EnumNames<E, N>& names) {
  std::string list;
  for (const auto& [v, name] : names) list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}

}  // namespace forge
