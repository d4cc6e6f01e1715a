// The images of a pack run's samples, written once each to a directory as
// files named by their SHA-256 (<hash>.png, ...), with what a trainer needs
// of each: its original size and, given a processor description, the size
// the processor resizes it to and its placeholder count (GUI click
// coordinates live in the processed space). index() is the directory's
// images.json: the processor and every image written.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "pack/call_reader.h"
#include "pack/vision.h"

namespace forge::pack {

struct ImageFile {
  std::string hash;  // SHA-256, hex
  std::string path;  // as written: dir/hash.ext
  int64_t width = 0, height = 0;
  std::optional<ProcessedSize> processed;  // with a processor description
};

class ImageFiles {
 public:
  // Reads images from its own connections to the stores (the call reader's
  // are its thread's alone).
  static Result<ImageFiles> Open(const std::vector<std::string>& stores, std::string dir,
                                 std::optional<ProcessorSpec> processor);

  // Each image's file, written on first use. InvalidData names an image the
  // stores lack or whose header gives no size.
  Result<std::vector<const ImageFile*>> Files(std::span<const std::string> hashes);
  // Checks a sample's placeholders: with a processor, each image's run of
  // placeholder tokens in ids must be as long as its size gives, at the
  // server's ranges when it gave them (mm_placeholders), else found between
  // vision start and end. Returns the ranges (empty without a processor).
  Result<std::vector<Placeholder>> Placeholders(std::span<const ImageFile* const> files,
                                                std::span<const int32_t> ids, const std::string& mm_placeholders) const;
  bool written_any() const { return !files_.empty(); }
  // Writes dir/images.json (only when an image was written).
  Status WriteIndex() const;

 private:
  ImageFiles(Stores stores, std::string dir, std::optional<ProcessorSpec> processor)
      : stores_(std::move(stores)), dir_(std::move(dir)), processor_(std::move(processor)) {}

  Stores stores_;
  std::string dir_;
  std::optional<ProcessorSpec> processor_;
  std::map<std::string, ImageFile> files_;
};

}  // namespace forge::pack
