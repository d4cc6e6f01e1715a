#include "dedup/vector_input.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>

#include "dedup/ngram_embedder.h"

namespace forge::dedup {

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicSize = 6;

struct NpyHeader {
  size_t data_offset = 0;  // bytes before the first float
  size_t rows = 0, dim = 0;
};

// The value after 'key': in NumPy's header dict, up to the next ',' or '}' at
// nesting depth 0 (the shape tuple keeps its commas).
std::string DictValue(const std::string& header, const std::string& key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  at = header.find(':', at);
  if (at == std::string::npos) return "";
  size_t end = ++at;
  int depth = 0;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string value = header.substr(at, end - at);
  size_t first = value.find_first_not_of(" ");
  size_t last = value.find_last_not_of(" ");
  return first == std::string::npos ? "" : value.substr(first, last - first + 1);
}

// Parses the dict that follows the magic, version and length (its text).
Result<NpyHeader> ParseNpyDict(const std::string& dict, const std::string& name) {
  std::string descr = DictValue(dict, "descr");
  if (descr.empty()) return Status::InvalidData(name + ": .npy header has no 'descr'");
  if (descr != "'<f4'" && descr != "'=f4'") {
    return Status::InvalidData(name + ": .npy dtype is " + descr +
                           ", forge-dedup reads float32 ('<f4'); save x.astype(numpy.float32)");
  }
  if (DictValue(dict, "fortran_order") != "False") {
    return Status::InvalidData(name + ": .npy array is in Fortran order; save numpy.ascontiguousarray(x)");
  }
  std::string shape = DictValue(dict, "shape");
  std::vector<size_t> dims;
  if (shape.size() >= 2 && shape.front() == '(' && shape.back() == ')') {
    std::string inner = shape.substr(1, shape.size() - 2);
    size_t pos = 0;
    while (pos < inner.size()) {
      size_t comma = inner.find(',', pos);
      std::string part = inner.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? inner.size() : comma + 1;
      if (part.find_first_not_of(" ") == std::string::npos) continue;
      char* end = nullptr;
      unsigned long long v = std::strtoull(part.c_str(), &end, 10);
      if (end == part.c_str() || std::string(end).find_first_not_of(" L") != std::string::npos) {
        return Status::InvalidData(name + ": .npy shape " + shape + " is not a tuple of integers");
      }
      dims.push_back(static_cast<size_t>(v));
    }
  }
  if (dims.size() != 2 || dims[1] == 0) {
    return Status::InvalidData(name + ": .npy shape is " + (shape.empty() ? "missing" : shape) +
                           "; expected (records, dimensions)");
  }
  NpyHeader h;
  h.rows = dims[0];
  h.dim = dims[1];
  return h;
}

// Reads magic, version, header length and dict from the first bytes.
Result<NpyHeader> ParseNpyPreamble(const char* bytes, size_t size, const std::string& name,
                                   std::string* dict_out) {
  if (size < kNpyMagicSize + 4 || std::memcmp(bytes, kNpyMagic, kNpyMagicSize) != 0) {
    return Status::InvalidData(name + ": not a .npy file (no \\x93NUMPY header)");
  }
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t length_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3) {
    return Status::InvalidData(name + ": .npy format version " + std::to_string(major) +
                           " is not 1, 2 or 3");
  }
  if (size < 8 + length_bytes) return Status::InvalidData(name + ": .npy header is cut short");
  size_t length = 0;
  for (size_t i = 0; i < length_bytes; ++i) {
    length |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  }
  size_t offset = 8 + length_bytes + length;
  if (offset > size) return Status::InvalidData(name + ": .npy header is cut short");
  *dict_out = std::string(bytes + 8 + length_bytes, length);
  auto header = ParseNpyDict(*dict_out, name);
  if (!header.ok()) return header.status();
  header->data_offset = offset;
  return header;
}

Status CheckDataSize(size_t data_bytes, size_t rows, size_t dim, const std::string& name) {
  if (dim != 0 && rows > SIZE_MAX / 4 / dim) return Status::InvalidData(name + ": shape too large");
  size_t expected = rows * dim * 4;
  if (data_bytes != expected) {
    return Status::InvalidData(name + ": holds " + std::to_string(data_bytes) +
                           " bytes of data, but shape (" + std::to_string(rows) + ", " +
                           std::to_string(dim) + ") float32 needs " + std::to_string(expected));
  }
  return Status::Ok();
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

Result<Matrix> ParseNpy(const std::string& bytes, const std::string& name) {
  std::string dict;
  auto header = ParseNpyPreamble(bytes.data(), bytes.size(), name, &dict);
  if (!header.ok()) return header.status();
  FORGE_RETURN_IF_ERROR(
      CheckDataSize(bytes.size() - header->data_offset, header->rows, header->dim, name));
  Matrix m;
  m.rows = header->rows;
  m.dim = header->dim;
  m.data.resize(m.rows * m.dim);
  std::memcpy(m.data.data(), bytes.data() + header->data_offset, m.data.size() * 4);
  return m;
}

Result<Matrix> ReadVectorFile(const std::string& path, size_t raw_dim, size_t expected_dim) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return Status::NotFound(path + ": " + std::strerror(errno));
  if (std::fseek(file.get(), 0, SEEK_END) != 0) return Status::IoError(path + ": cannot seek");
  long end = std::ftell(file.get());
  if (end < 0) return Status::IoError(path + ": " + std::strerror(errno));
  size_t size = static_cast<size_t>(end);
  std::rewind(file.get());
  // The header is at most 64 KiB in version 1 (length in 2 bytes); read that
  // much to find it, then the data straight into the matrix.
  std::string head(std::min<size_t>(size, 65536 + 12), '\0');
  if (std::fread(head.data(), 1, head.size(), file.get()) != head.size()) {
    return Status::IoError(path + ": read failed");
  }
  Matrix m;
  size_t offset = 0;
  if (head.size() >= kNpyMagicSize && std::memcmp(head.data(), kNpyMagic, kNpyMagicSize) == 0) {
    std::string dict;
    auto header = ParseNpyPreamble(head.data(), head.size(), path, &dict);
    if (!header.ok()) return header.status();
    m.rows = header->rows;
    m.dim = header->dim;
    offset = header->data_offset;
    if (raw_dim != 0 && raw_dim != m.dim) {
      return Status::InvalidData(path + ": rows have " + std::to_string(m.dim) +
                             " dimensions, --dim says " + std::to_string(raw_dim));
    }
  } else if (raw_dim == 0) {
    return Status::InvalidArgument(path + ": not a .npy file (no \\x93NUMPY header); for raw float32 "
                         "rows give their length with --dim");
  } else {
    if (size % (raw_dim * 4) != 0) {
      return Status::InvalidData(path + ": " + std::to_string(size) +
                             " bytes is not a whole number of float32 rows of " +
                             std::to_string(raw_dim) + " (--dim)");
    }
    m.dim = raw_dim;
    m.rows = size / (raw_dim * 4);
  }
  FORGE_RETURN_IF_ERROR(CheckDataSize(size - offset, m.rows, m.dim, path));
  if (expected_dim != 0 && m.dim != expected_dim) {
    return Status::InvalidData(path + ": rows have " + std::to_string(m.dim) + " dimensions, expected " +
                           std::to_string(expected_dim));
  }
  m.data.resize(m.rows * m.dim);
  if (std::fseek(file.get(), static_cast<long>(offset), SEEK_SET) != 0 ||
      std::fread(m.data.data(), 4, m.data.size(), file.get()) != m.data.size()) {
    return Status::IoError(path + ": read failed");
  }
  return m;
}

std::string CheckAndNormaliseRow(float* row, size_t dim) {
  double sum = 0;
  for (size_t k = 0; k < dim; ++k) {
    if (!std::isfinite(row[k])) {
      return "element " + std::to_string(k) + " is " + (std::isnan(row[k]) ? "NaN" : "infinite");
    }
    sum += static_cast<double>(row[k]) * row[k];
  }
  if (sum == 0) return "is all zeros";
  NormaliseL2(std::span<float>(row, dim));
  return "";
}

std::string AppendJsonVector(const records::Json& value, std::vector<float>& out) {
  if (!value.is_array()) return std::string("is ") + value.type_name() + ", not an array of numbers";
  if (value.empty()) return "is an empty array";
  size_t start = out.size();
  for (size_t k = 0; k < value.size(); ++k) {
    if (!value[k].is_number()) {
      out.resize(start);
      return "element " + std::to_string(k) + " is " + value[k].type_name() + ", not a number";
    }
    out.push_back(value[k].get<float>());
  }
  return "";
}

}  // namespace forge::dedup
