// safetensors, written by hand (the format is small): 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and
// [begin, end) byte offsets into the data buffer, an optional __metadata__
// object of string→string, then the buffer. Loadable by torch, numpy and the
// reference `safetensors` package.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::pack {

enum class DType { kI64, kI32, kF32, kU8 };

const char* DTypeName(DType dtype);
size_t DTypeSize(DType dtype);

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;  // little-endian, row-major, product(shape) elements
};

template <typename T>
TensorView Flat(std::string name, DType dtype, const std::vector<T>& v) {
  return TensorView{std::move(name), dtype, {static_cast<int64_t>(v.size())}, v.data()};
}

// Writes the file atomically (a temporary next to it, then rename).
Status WriteSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                        const std::map<std::string, std::string>& metadata);

// A parsed file: the header and each tensor's raw bytes (for tests and tools).
struct SafetensorsFile {
  nlohmann::json header;
  std::map<std::string, std::string> bytes;
};
Result<SafetensorsFile> ReadSafetensors(const std::string& path);

}  // namespace forge::pack
