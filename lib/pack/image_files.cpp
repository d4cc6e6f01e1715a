#include "pack/image_files.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/hash.h"
#include "base/image_info.h"

namespace forge::pack {

Result<ImageFiles> ImageFiles::Open(const std::vector<std::string>& stores, std::string dir,
                                    std::optional<ProcessorSpec> processor) {
  auto opened = Stores::Open(stores);
  if (!opened.ok()) return opened.status();
  return ImageFiles(std::move(*opened), std::move(dir), std::move(processor));
}

Result<std::vector<const ImageFile*>> ImageFiles::Files(std::span<const std::string> hashes) {
  std::vector<const ImageFile*> out;
  for (const std::string& hash : hashes) {
    if (auto known = files_.find(hash); known != files_.end()) {
      out.push_back(&known->second);
      continue;
    }
    auto bytes = stores_.Image(hash);
    if (!bytes.ok()) return Status::InvalidData(bytes.status().message());
    auto info = ReadImageInfo(*bytes);
    if (!info) return Status::InvalidData("image " + hash + " has no readable size");
    ImageFile f{hash, (std::filesystem::path(dir_) / (hash + "." + info->extension)).string(), info->width,
                info->height, std::nullopt};
    if (processor_) {
      auto processed = Process(*processor_, info->height, info->width);
      if (!processed.ok()) return Status::InvalidData("image " + hash + ": " + processed.status().message());
      f.processed = *processed;
    }
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return Status::CannotCreate(dir_ + ": " + ec.message());
    std::string temporary = f.path + ".tmp";
    {
      std::ofstream file(temporary, std::ios::binary);
      if (!(file << *bytes) || !file.flush()) return Status::CannotCreate(temporary + ": cannot write");
    }
    std::filesystem::rename(temporary, f.path, ec);
    if (ec) return Status::CannotCreate(f.path + ": " + ec.message());
    out.push_back(&files_.emplace(hash, std::move(f)).first->second);
  }
  return out;
}

Result<std::vector<Placeholder>> ImageFiles::Placeholders(std::span<const ImageFile* const> files,
                                                          std::span<const int32_t> ids,
                                                          const std::string& mm_placeholders) const {
  if (!processor_) return std::vector<Placeholder>{};
  std::vector<int64_t> expected;
  for (const ImageFile* f : files) expected.push_back(f->processed->tokens);
  if (!mm_placeholders.empty()) return CheckServerPlaceholders(mm_placeholders, ids, expected, *processor_);
  return LocatePlaceholders(ids, expected, *processor_);
}

Status ImageFiles::WriteIndex() const {
  if (files_.empty()) return Status::Ok();
  nlohmann::json images = nlohmann::json::object();
  for (const auto& [hash, f] : files_) {
    nlohmann::json j = {{"file", std::filesystem::path(f.path).filename().string()},
                        {"width", f.width}, {"height", f.height}};
    if (f.processed) {
      j["processed_width"] = f.processed->width;
      j["processed_height"] = f.processed->height;
      j["image_grid_thw"] = {f.processed->grid_t, f.processed->grid_h, f.processed->grid_w};
      j["placeholder_tokens"] = f.processed->tokens;
    }
    images[hash] = std::move(j);
  }
  nlohmann::json index = {{"images", std::move(images)}};
  if (processor_) index["processor"] = processor_->ToJson();
  std::string path = (std::filesystem::path(dir_) / "images.json").string();
  std::ofstream file(path);
  if (!(file << index.dump(2) << "\n")) return Status::CannotCreate(path + ": cannot write");
  return Status::Ok();
}

}  // namespace forge::pack
