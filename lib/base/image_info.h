// An image's format and size, read from its header alone (no decoding):
// PNG (IHDR), JPEG (the first SOFn marker), GIF (the logical screen) and
// WebP (VP8, VP8L or VP8X). That is all forge needs of an image: the size a
// VL processor resizes from, and a file name extension.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace forge {

struct ImageInfo {
  std::string mime;       // image/png, image/jpeg, image/gif, image/webp
  std::string extension;  // png, jpg, gif, webp
  int64_t width = 0, height = 0;
};

// Whether bytes start like one of the four formats (a cheap test before
// reading a header).
bool LooksLikeImage(std::string_view bytes);
// The format and size; nullopt when the bytes are none of the four or their
// header is cut short or gives no positive size.
std::optional<ImageInfo> ReadImageInfo(std::string_view bytes);

}  // namespace forge
