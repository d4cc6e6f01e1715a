#include "base/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace forge {

Status WriteFileAtomically(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::CannotCreate(path + ": " + std::strerror(errno));
  const bool written = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  int error = written ? 0 : errno;
  if (std::fclose(f) != 0 && error == 0) error = errno;
  if (!written || error != 0) {
    std::remove(tmp.c_str());
    return Status::IoError(path + ": write failed: " + std::strerror(error != 0 ? error : EIO));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = errno;
    std::remove(tmp.c_str());
    return Status::IoError(path + ": " + std::strerror(error));
  }
  return Status::Ok();
}

}  // namespace forge
