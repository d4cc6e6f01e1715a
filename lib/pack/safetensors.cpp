#include "pack/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

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

Status WriteSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  // The reference writer's order: widest dtype first (so every tensor stays
  // aligned to its element size), then by name.
  std::vector<const TensorView*> order;
  for (const TensorView& t : tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) {
    if (DTypeSize(a->dtype) != DTypeSize(b->dtype)) return DTypeSize(a->dtype) > DTypeSize(b->dtype);
    return a->name < b->name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  size_t offset = 0;
  for (const TensorView* t : order) {
    if (header.contains(t->name)) return Status::Internal("duplicate tensor name " + t->name);
    size_t size = ByteSize(*t);
    header[t->name] = {{"dtype", DTypeName(t->dtype)}, {"shape", t->shape}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  // Pad with spaces so the buffer starts 8-byte aligned, as the reference does.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');

  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::CantCreate(path + ": " + std::strerror(errno));
  uint64_t n = text.size();
  bool ok = std::fwrite(&n, 8, 1, f) == 1 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  for (const TensorView* t : order) {
    size_t size = ByteSize(*t);
    if (ok && size) ok = std::fwrite(t->data, 1, size, f) == size;
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return Status::Io(path + ": write failed: " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::Io(path + ": " + ec.message());
  return Status::Ok();
}

Result<SafetensorsFile> ReadSafetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NoInput(path + ": cannot open");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (all.size() < 8) return Status::DataErr(path + ": shorter than the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, all.data(), 8);
  if (n > all.size() - 8) return Status::DataErr(path + ": header length past the end of the file");
  SafetensorsFile file;
  file.header = nlohmann::json::parse(all.substr(8, n), nullptr, false);
  if (!file.header.is_object()) return Status::DataErr(path + ": header is not a JSON object");
  size_t base = 8 + n;
  for (const auto& [name, info] : file.header.items()) {
    if (name == "__metadata__") continue;
    size_t begin = info["data_offsets"][0].get<size_t>(), end = info["data_offsets"][1].get<size_t>();
    if (end < begin || base + end > all.size()) return Status::DataErr(path + ": " + name + ": offsets out of range");
    file.bytes[name] = all.substr(base + begin, end - begin);
  }
  return file;
}

}  // namespace forge::pack
