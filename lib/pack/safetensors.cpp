#include "pack/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

namespace forge::pack {

static_assert(std::endian::native == std::endian::little,
              "safetensors buffers are little-endian; add byte swapping for this host");

const char* DTypeName(DType d) {
  switch (d) {
    case DType::kI64: return "I64";
    case DType::kI32: return "I32";
    case DType::kF32: return "F32";
    case DType::kU8: return "U8";
  }
  return "?";
}

size_t DTypeSize(DType d) {
  switch (d) {
    case DType::kI64: return 8;
    case DType::kI32: return 4;
    case DType::kF32: return 4;
    case DType::kU8: return 1;
  }
  return 0;
}

namespace {

size_t ByteSize(const TensorView& t) {
  size_t n = 1;
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  return n * DTypeSize(t.dtype);
}

}  // namespace

Result<SafetensorsBuffer> SafetensorsBuffer::Layout(const std::vector<TensorSpec>& tensors,
                                                     const std::map<std::string, std::string>& metadata,
                                                     std::string* storage) {
  // The reference writer's order: widest dtype first (so every tensor stays
  // aligned to its element size), then by name.
  std::vector<const TensorSpec*> order;
  for (const TensorSpec& t : tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TensorSpec* a, const TensorSpec* b) {
    if (DTypeSize(a->dtype) != DTypeSize(b->dtype)) return DTypeSize(a->dtype) > DTypeSize(b->dtype);
    return a->name < b->name;
  });

  // The header as nlohmann's compact dump of an ordered object would print
  // it, built as text: it is written once per file.
  auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  std::string text = "{";
  if (!metadata.empty()) {
    text += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) text += ',';
      first = false;
      text += quoted(k) + ":" + quoted(v);
    }
    text += "}";
  }
  SafetensorsBuffer buffer;
  std::vector<std::pair<std::string, size_t>> relative;
  size_t offset = 0;
  for (const TensorSpec* t : order) {
    if (t->name == "__metadata__" || std::any_of(relative.begin(), relative.end(), [&](const auto& r) {
          return r.first == t->name;
        })) {
      return Status::Internal("duplicate or reserved tensor name " + t->name);
    }
    size_t n = 1;
    std::string shape;
    for (int64_t d : t->shape) {
      n *= static_cast<size_t>(d);
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    }
    size_t size = n * DTypeSize(t->dtype);
    if (text.size() > 1) text += ',';
    text += quoted(t->name) + ":{\"dtype\":\"" + DTypeName(t->dtype) + "\",\"shape\":[" + shape +
            "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + size) + "]}";
    relative.emplace_back(t->name, offset);
    offset += size;
  }
  text += "}";
  // Pad with spaces so the buffer starts 8-byte aligned, as the reference does.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');

  const size_t base = 8 + text.size();
  storage->resize(base + offset);
  uint64_t n = text.size();
  std::memcpy(storage->data(), &n, 8);
  std::memcpy(storage->data() + 8, text.data(), text.size());
  buffer.storage_ = storage;
  for (const auto& [name, at] : relative) buffer.offset_[name] = base + at;
  return buffer;
}

char* SafetensorsBuffer::Data(const std::string& name) {
  auto it = offset_.find(name);
  return it == offset_.end() ? nullptr : storage_->data() + it->second;
}

namespace {
// Creating and renaming a file take its directory's lock in the kernel,
// which spins (burning a core) while another thread holds it; writers that
// share a directory queue here instead, asleep. Their data writes overlap.
std::mutex directory_operations;
}  // namespace

Status SafetensorsBuffer::WriteTo(const std::string& path) const {
  std::string tmp = path + ".tmp";
  int fd;
  {
    std::lock_guard<std::mutex> lock(directory_operations);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  if (fd < 0) return Status::CannotCreate(path + ": " + std::strerror(errno));
  const char* p = storage_->data();
  size_t left = storage_->size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      ::close(fd);
      std::remove(tmp.c_str());
      return Status::IoError(path + ": write failed: " + std::strerror(e));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    int e = errno;
    std::remove(tmp.c_str());
    return Status::IoError(path + ": write failed: " + std::strerror(e));
  }
  int renamed;
  {
    std::lock_guard<std::mutex> lock(directory_operations);
    renamed = std::rename(tmp.c_str(), path.c_str());
  }
  if (renamed != 0) {
    int e = errno;
    std::remove(tmp.c_str());
    return Status::IoError(path + ": " + std::strerror(e));
  }
  return Status::Ok();
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  for (const TensorView& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
  std::string storage;
  auto buffer = SafetensorsBuffer::Layout(specs, metadata, &storage);
  if (!buffer.ok()) return buffer.status();
  for (const TensorView& t : tensors) {
    size_t size = ByteSize(t);
    if (size) std::memcpy(buffer->Data(t.name), t.data, size);
  }
  return buffer->WriteTo(path);
}

Result<SafetensorsFile> ReadSafetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (all.size() < 8) return Status::InvalidData(path + ": shorter than the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, all.data(), 8);
  if (n > all.size() - 8) return Status::InvalidData(path + ": header length past the end of the file");
  SafetensorsFile file;
  file.header = nlohmann::json::parse(all.substr(8, n), nullptr, false);
  if (!file.header.is_object()) return Status::InvalidData(path + ": header is not a JSON object");
  size_t base = 8 + n;
  for (const auto& [name, info] : file.header.items()) {
    if (name == "__metadata__") continue;
    size_t begin = info["data_offsets"][0].get<size_t>(), end = info["data_offsets"][1].get<size_t>();
    if (end < begin || base + end > all.size()) return Status::InvalidData(path + ": " + name + ": offsets out of range");
    file.bytes[name] = all.substr(base + begin, end - begin);
  }
  return file;
}

}  // namespace forge::pack
