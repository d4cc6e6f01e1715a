// Just enough tar (POSIX ustar with pax extended headers for long names) to
// copy files into a sandbox and read one back: Docker's archive endpoints and
// `tar` inside a pod both speak it. Built in memory; task files are small.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace forge::sandbox {

class TarWriter;

// Adds a copy as a sandbox's CopyIn makes it: a host file lands as
// prefix/<its name>, a directory's entries (sorted) land in prefix itself.
Status AddCopy(TarWriter& tar, const std::string& host_path, const std::string& prefix);

class TarWriter {
 public:
  // Adds every parent directory of archive_path ("a/b/c" adds "a/" and "a/b/").
  void AddParents(std::string_view archive_path);
  void AddDirectory(std::string_view archive_path, uint32_t mode = 0755);
  void AddFile(std::string_view archive_path, std::string_view content, uint32_t mode = 0644);
  void AddSymlink(std::string_view archive_path, std::string_view target);
  // Adds a host file or directory tree (recursively) under archive_path,
  // keeping permission bits and symlinks. Other file types are skipped.
  Status AddHostPath(const std::string& host_path, std::string_view archive_path);
  // Ends the archive (two zero blocks) and returns it.
  std::string Finish();

 private:
  void Header(std::string_view name, char type, uint64_t size, uint32_t mode,
              std::string_view link = {});
  void Pad();

  std::string data_;
};

struct TarEntry {
  std::string name;
  char type = '0';
  std::string content;  // regular files only, up to max_bytes
  uint64_t size = 0;    // the full size as recorded in the archive
};

// Returns the first regular file in a tar archive, reading at most max_bytes
// of its content. NotFound if there is none; InvalidData if the archive is broken.
Result<TarEntry> FirstFileInTar(std::string_view archive, size_t max_bytes);

}  // namespace forge::sandbox
