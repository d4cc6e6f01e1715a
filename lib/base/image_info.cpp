#include "base/image_info.h"

namespace forge {
namespace {

uint32_t Be16(std::string_view b, size_t at) {
  return (static_cast<uint8_t>(b[at]) << 8) | static_cast<uint8_t>(b[at + 1]);
}
uint32_t Be32(std::string_view b, size_t at) { return (Be16(b, at) << 16) | Be16(b, at + 2); }
uint32_t Le16(std::string_view b, size_t at) {
  return static_cast<uint8_t>(b[at]) | (static_cast<uint8_t>(b[at + 1]) << 8);
}
uint32_t Le24(std::string_view b, size_t at) { return Le16(b, at) | (static_cast<uint8_t>(b[at + 2]) << 16); }
uint32_t Le32(std::string_view b, size_t at) { return Le16(b, at) | (Le16(b, at + 2) << 16); }

constexpr std::string_view kPng("\x89PNG\r\n\x1a\n", 8);

std::optional<ImageInfo> Sized(const char* mime, const char* extension, int64_t width, int64_t height) {
  if (width <= 0 || height <= 0) return std::nullopt;
  return ImageInfo{mime, extension, width, height};
}

std::optional<ImageInfo> Png(std::string_view b) {
  if (b.size() < 24 || b.substr(12, 4) != "IHDR") return std::nullopt;
  return Sized("image/png", "png", Be32(b, 16), Be32(b, 20));
}

// The first start-of-frame segment (SOF0..SOF15 but DHT, JPG and DAC) gives
// the size; segments before it are skipped by their lengths.
std::optional<ImageInfo> Jpeg(std::string_view b) {
  size_t at = 2;
  while (at + 4 <= b.size()) {
    if (static_cast<uint8_t>(b[at]) != 0xFF) return std::nullopt;
    uint8_t marker = static_cast<uint8_t>(b[at + 1]);
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {  // no length
      at += 2;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // end, or scan data before any frame
    uint32_t length = Be16(b, at + 2);
    bool frame = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (frame) {
      if (at + 9 > b.size() || length < 7) return std::nullopt;
      return Sized("image/jpeg", "jpg", Be16(b, at + 7), Be16(b, at + 5));
    }
    if (length < 2) return std::nullopt;
    at += 2 + length;
  }
  return std::nullopt;
}

std::optional<ImageInfo> Gif(std::string_view b) {
  if (b.size() < 10) return std::nullopt;
  return Sized("image/gif", "gif", Le16(b, 6), Le16(b, 8));
}

std::optional<ImageInfo> Webp(std::string_view b) {
  if (b.size() < 30) return std::nullopt;
  std::string_view chunk = b.substr(12, 4);
  if (chunk == "VP8 ") {  // lossy: a key frame's start code, then 14-bit sizes
    if (b.substr(23, 3) != std::string_view("\x9d\x01\x2a", 3)) return std::nullopt;
    return Sized("image/webp", "webp", Le16(b, 26) & 0x3FFF, Le16(b, 28) & 0x3FFF);
  }
  if (chunk == "VP8L") {  // lossless: a signature byte, then 14-bit sizes minus one
    if (static_cast<uint8_t>(b[20]) != 0x2F) return std::nullopt;
    uint32_t bits = Le32(b, 21);
    return Sized("image/webp", "webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1);
  }
  if (chunk == "VP8X") {  // extended: 24-bit canvas sizes minus one
    return Sized("image/webp", "webp", Le24(b, 24) + 1, Le24(b, 27) + 1);
  }
  return std::nullopt;
}

}  // namespace

bool LooksLikeImage(std::string_view b) {
  return b.substr(0, 8) == kPng || (b.size() >= 3 && b.substr(0, 3) == "\xFF\xD8\xFF") ||
         b.substr(0, 6) == "GIF87a" || b.substr(0, 6) == "GIF89a" ||
         (b.size() >= 12 && b.substr(0, 4) == "RIFF" && b.substr(8, 4) == "WEBP");
}

std::optional<ImageInfo> ReadImageInfo(std::string_view b) {
  if (b.substr(0, 8) == kPng) return Png(b);
  if (b.size() >= 3 && b.substr(0, 3) == "\xFF\xD8\xFF") return Jpeg(b);
  if (b.substr(0, 6) == "GIF87a" || b.substr(0, 6) == "GIF89a") return Gif(b);
  if (b.size() >= 12 && b.substr(0, 4) == "RIFF" && b.substr(8, 4) == "WEBP") return Webp(b);
  return std::nullopt;
}

}  // namespace forge
