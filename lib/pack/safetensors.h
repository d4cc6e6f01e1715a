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

// A file laid out in memory before it is written: the header first, then
// each tensor's bytes at a known place for the caller to fill in directly,
// so a micro-batch is copied once and written with one write() call.
struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

class SafetensorsBuffer {
 public:
  // Lays the tensors out in the reference writer's order (widest dtype
  // first, then by name) into `storage`, which is reused across files
  // (growing a fresh buffer per file costs more in page faults than the
  // copying). The tensors' bytes are left for the caller to fill.
  static Result<SafetensorsBuffer> Layout(const std::vector<TensorSpec>& tensors,
                                          const std::map<std::string, std::string>& metadata,
                                          std::string* storage);
  // Where tensor `name` starts; nullptr for a name not laid out.
  char* Data(const std::string& name);
  template <typename T>
  T* As(const std::string& name) { return reinterpret_cast<T*>(Data(name)); }
  // Writes the whole file with one write() into a temporary next to `path`, then renames it.
  Status WriteTo(const std::string& path) const;

 private:
  std::string* storage_ = nullptr;
  std::map<std::string, size_t> offset_;  // of each tensor's first byte in storage
};

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
