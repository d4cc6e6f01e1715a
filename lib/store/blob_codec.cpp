#include "store/blob_codec.h"

#include <zstd.h>

#include <cstring>
#include <memory>

namespace forge::store {
namespace {

// Below this a frame's own bytes eat most of what compression saves.
constexpr size_t kSmallestPacked = 256;
// zstd's fastest level: the store's writer compresses every new part of
// every call, on a core the calls may want (~500 MB/s here).
constexpr int kLevel = 1;
// A frame claiming more than this is taken for corrupt, not allocated.
constexpr unsigned long long kLargestPart = 1ull << 30;

bool IsFrame(std::string_view bytes) {
  static constexpr unsigned char kMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0;
}

// One context per thread: creating one is most of the work for a small part.
struct FreeCompress {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct FreeDecompress {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

std::string PackBlob(std::string_view text) {
  if (text.size() < kSmallestPacked) return std::string(text);
  thread_local std::unique_ptr<ZSTD_CCtx, FreeCompress> context(ZSTD_createCCtx());
  std::string packed(ZSTD_compressBound(text.size()), '\0');
  size_t n = context ? ZSTD_compressCCtx(context.get(), packed.data(), packed.size(), text.data(), text.size(), kLevel)
                     : 0;
  if (!context || ZSTD_isError(n) || n > text.size() - text.size() / 10) return std::string(text);
  packed.resize(n);
  return packed;
}

Result<std::string> UnpackBlob(std::string_view stored) {
  if (!IsFrame(stored)) return std::string(stored);
  unsigned long long size = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kLargestPart) {
    return Status::InvalidData("a compressed content blob has no valid size");
  }
  thread_local std::unique_ptr<ZSTD_DCtx, FreeDecompress> context(ZSTD_createDCtx());
  if (!context) return Status::Internal("zstd: cannot create a decompression context");
  std::string text(static_cast<size_t>(size), '\0');
  size_t n = ZSTD_decompressDCtx(context.get(), text.data(), text.size(), stored.data(), stored.size());
  if (ZSTD_isError(n) || n != text.size()) {
    return Status::InvalidData(std::string("a compressed content blob is corrupt: ") +
                           (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
  }
  return text;
}

}  // namespace forge::store
