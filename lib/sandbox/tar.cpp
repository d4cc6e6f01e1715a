#include "sandbox/tar.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace forge::sandbox {
namespace {

constexpr size_t kBlock = 512;

void Octal(char* field, size_t width, uint64_t value) {
  // width includes the terminating NUL.
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + (value & 7)));
    value >>= 3;
  } while (value);
  if (digits.size() < width - 1) digits.insert(0, width - 1 - digits.size(), '0');
  std::memcpy(field, digits.data(), std::min(digits.size(), width - 1));
}

uint64_t ParseOctal(const char* field, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width && field[i]; ++i) {
    if (field[i] == ' ') continue;
    if (field[i] < '0' || field[i] > '7') break;
    value = value * 8 + static_cast<uint64_t>(field[i] - '0');
  }
  return value;
}

std::string PaxRecord(std::string_view key, std::string_view value) {
  // "<len> key=value\n" where len counts itself.
  size_t body = 1 + key.size() + 1 + value.size() + 1;
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) ++len;
  return std::to_string(len) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

}  // namespace

void TarWriter::Pad() {
  if (size_t rest = data_.size() % kBlock; rest) data_.append(kBlock - rest, '\0');
}

void TarWriter::Header(std::string_view name, char type, uint64_t size, uint32_t mode,
                       std::string_view link) {
  if (name.size() > 99 || link.size() > 99) {
    std::string pax;
    if (name.size() > 99) pax += PaxRecord("path", name);
    if (link.size() > 99) pax += PaxRecord("linkpath", link);
    Header("././@PaxHeader", 'x', pax.size(), 0644);
    data_ += pax;
    Pad();
    name = name.substr(0, 99);
    link = link.substr(0, 99);
  }
  char block[kBlock] = {};
  std::memcpy(block, name.data(), name.size());
  Octal(block + 100, 8, mode & 07777);
  Octal(block + 108, 8, 0);
  Octal(block + 116, 8, 0);
  Octal(block + 124, 12, size);
  Octal(block + 136, 12, 0);
  std::memset(block + 148, ' ', 8);
  block[156] = type;
  std::memcpy(block + 157, link.data(), link.size());
  std::memcpy(block + 257, "ustar\0" "00", 8);
  unsigned sum = 0;
  for (unsigned char c : block) sum += c;
  Octal(block + 148, 7, sum);
  data_.append(block, kBlock);
}

void TarWriter::AddParents(std::string_view archive_path) {
  size_t pos = 0;
  while ((pos = archive_path.find('/', pos)) != std::string_view::npos) {
    if (pos > 0) AddDirectory(archive_path.substr(0, pos));
    ++pos;
  }
}

void TarWriter::AddDirectory(std::string_view archive_path, uint32_t mode) {
  std::string name(archive_path);
  if (name.empty() || name.back() != '/') name.push_back('/');
  Header(name, '5', 0, mode);
}

void TarWriter::AddFile(std::string_view archive_path, std::string_view content, uint32_t mode) {
  Header(archive_path, '0', content.size(), mode);
  data_.append(content);
  Pad();
}

void TarWriter::AddSymlink(std::string_view archive_path, std::string_view target) {
  Header(archive_path, '2', 0, 0777, target);
}

Status TarWriter::AddHostPath(const std::string& host_path, std::string_view archive_path) {
  struct stat st;
  if (lstat(host_path.c_str(), &st) != 0) {
    return Status::NotFound(host_path + ": " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    std::vector<char> target(4096);
    ssize_t n = readlink(host_path.c_str(), target.data(), target.size());
    if (n < 0) return Status::IoError(host_path + ": " + std::strerror(errno));
    AddSymlink(archive_path, std::string_view(target.data(), static_cast<size_t>(n)));
    return Status::Ok();
  }
  if (S_ISDIR(st.st_mode)) {
    AddDirectory(archive_path, st.st_mode & 07777);
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(host_path, ec)) {
      names.push_back(entry.path().filename().string());
    }
    if (ec) return Status::IoError(host_path + ": " + ec.message());
    std::sort(names.begin(), names.end());  // reproducible archives
    for (const auto& name : names) {
      FORGE_RETURN_IF_ERROR(
          AddHostPath(host_path + "/" + name, std::string(archive_path) + "/" + name));
    }
    return Status::Ok();
  }
  if (!S_ISREG(st.st_mode)) return Status::Ok();
  std::ifstream in(host_path, std::ios::binary);
  if (!in) return Status::NotFound(host_path + ": cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return Status::IoError(host_path + ": read error");
  AddFile(archive_path, content.str(), st.st_mode & 07777);
  return Status::Ok();
}

std::string TarWriter::Finish() {
  data_.append(2 * kBlock, '\0');
  return std::move(data_);
}

Result<TarEntry> FirstFileInTar(std::string_view archive, size_t max_bytes) {
  size_t pos = 0;
  std::string pending_name;
  while (pos + kBlock <= archive.size()) {
    const char* block = archive.data() + pos;
    if (std::all_of(block, block + kBlock, [](char c) { return c == 0; })) break;
    unsigned stored = static_cast<unsigned>(ParseOctal(block + 148, 8));
    unsigned sum = 0;
    for (size_t i = 0; i < kBlock; ++i) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
    }
    if (sum != stored) {
      return Status::InvalidData("tar: bad header checksum at offset " + std::to_string(pos));
    }
    TarEntry entry;
    entry.type = block[156] ? block[156] : '0';
    entry.size = ParseOctal(block + 124, 12);
    std::string name(block, strnlen(block, 100));
    if (std::memcmp(block + 257, "ustar", 5) == 0 && block[345]) {
      name = std::string(block + 345, strnlen(block + 345, 155)) + "/" + name;
    }
    entry.name = pending_name.empty() ? name : pending_name;
    pos += kBlock;
    if (pos + entry.size > archive.size()) {
      return Status::InvalidData("tar: " + entry.name + ": archive ends inside the entry");
    }
    std::string_view body = archive.substr(pos, entry.size);
    pos += (entry.size + kBlock - 1) / kBlock * kBlock;
    if (entry.type == 'x') {  // pax: pick up a long path for the next entry
      size_t p = 0;
      while (p < body.size()) {
        size_t space = body.find(' ', p);
        if (space == std::string_view::npos) break;
        size_t len = std::strtoul(std::string(body.substr(p, space - p)).c_str(), nullptr, 10);
        if (len == 0 || p + len > body.size()) break;
        std::string_view record = body.substr(space + 1, len - (space + 1 - p) - 1);
        if (record.starts_with("path=")) pending_name = std::string(record.substr(5));
        p += len;
      }
      continue;
    }
    if (entry.type == 'L') {  // GNU long name
      pending_name = std::string(body.substr(0, strnlen(body.data(), body.size())));
      continue;
    }
    pending_name.clear();
    if (entry.type == '0' || entry.type == '7') {
      entry.content = std::string(body.substr(0, std::min<size_t>(max_bytes, body.size())));
      return entry;
    }
  }
  return Status::NotFound("tar: no regular file in the archive");
}

// Names sorted, so the archive is the same every time.
Status AddCopy(TarWriter& tar, const std::string& host_path, const std::string& prefix) {
  auto under = [&](const std::string& name) { return prefix.empty() ? name : prefix + "/" + name; };
  std::error_code ec;
  if (!std::filesystem::is_directory(host_path, ec)) {
    return tar.AddHostPath(host_path, under(std::filesystem::path(host_path).filename().string()));
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(host_path, ec)) {
    names.push_back(entry.path().filename().string());
  }
  if (ec) return Status::NotFound(host_path + ": " + ec.message());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) FORGE_RETURN_IF_ERROR(tar.AddHostPath(host_path + "/" + name, under(name)));
  return Status::Ok();
}

}  // namespace forge::sandbox
