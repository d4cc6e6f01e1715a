// What an image forge builds for a cluster is made of, and the hash that
// names it: a task's build context (its Dockerfile among its files) and the
// harness layer put on top. The hash covers each file's path, type,
// permission bits and content (a symlink's target), in path order, and
// nothing of the machine (no mtimes, owners, or the order a directory lists
// its entries), so the same inputs give the same tag anywhere and a tag the
// registry already has is an image nobody needs to build again.
//
// What it does not cover: what a FROM line names moves under the same name
// (ubuntu:24.04 today and next month); pin a digest in the Dockerfile when
// that matters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace forge::sandbox::docker {

struct InputFile {
  std::string path;     // relative, '/'-separated
  char type = 'f';      // 'f' file, 'd' directory, 'l' symlink
  uint32_t mode = 0;    // permission bits (07777)
  std::string content;  // SHA-256 hex of a file's bytes; a symlink's target; "" for a directory
};

// The harness layer: a host directory copied into the image at `dest`.
struct HarnessLayer {
  std::string source_dir;
  std::string dest;
};

// Every entry under dir (recursively), sorted by path; files are hashed as
// they are read, never held whole. Other file types (sockets, fifos) are
// skipped, as the build context's tar skips them. NotFound naming dir.
Result<std::vector<InputFile>> ListInputs(const std::string& dir);

// The hash (64 hex digits) of a context's entries and a layer's (its dest
// and entries; no layer: both empty). Sorts its own copy of each list, so
// the order they come in does not matter.
std::string ImageInputHash(std::vector<InputFile> context, const std::string& layer_dest,
                           std::vector<InputFile> layer);

// ListInputs of context_dir and of layer's source (when given), hashed.
Result<std::string> ImageInputHashOf(const std::string& context_dir, const HarnessLayer* layer);

// The Dockerfile of the harness layer over base (an image forge built).
std::string HarnessLayerDockerfile(const std::string& base, const std::string& dest);

}  // namespace forge::sandbox::docker
