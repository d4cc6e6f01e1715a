// Arrays of numbers as the store keeps them (token ids, logprobs, vectors):
// their bytes, little-endian, which every machine forge runs on is.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

namespace forge::store {

template <typename T>
std::string_view BytesOf(const std::vector<T>& values) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

// Fills *out from bytes, reusing its capacity; false when the bytes are not
// a whole number of elements (the whole ones are still copied).
template <typename T>
bool AssignFromBytes(std::string_view bytes, std::vector<T>* out) {
  static_assert(std::is_trivially_copyable_v<T>);
  out->resize(bytes.size() / sizeof(T));
  if (!out->empty()) std::memcpy(out->data(), bytes.data(), out->size() * sizeof(T));
  return bytes.size() % sizeof(T) == 0;
}

// How many ids a and b begin with alike. A harness resends its conversation,
// so a call's prompt begins with the last one's: tens of thousands of ids,
// compared a block at a time with memcmp before the first that differs is sought.
template <typename T>
size_t CommonPrefix(const T* a, size_t a_size, const T* b, size_t b_size) {
  static_assert(std::is_trivially_copyable_v<T>);
  constexpr size_t kBlock = 2048 / sizeof(T);
  const size_t n = std::min(a_size, b_size);
  size_t i = 0;
  while (i + kBlock <= n && std::memcmp(a + i, b + i, kBlock * sizeof(T)) == 0) i += kBlock;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}
inline size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return CommonPrefix(a.data(), a.size(), b.data(), b.size());
}
// The same for texts (a harness's request resends the last one's).
inline size_t CommonPrefix(std::string_view a, std::string_view b) {
  return CommonPrefix(a.data(), a.size(), b.data(), b.size());
}

}  // namespace forge::store
