#include "store/inline_images.h"

#include <algorithm>
#include <array>

#include "base/base64.h"
#include "base/image_info.h"

namespace forge::store {
namespace {

// How each format's bytes begin, base64-encoded: a payload starts with one
// of these (and only payloads that do are decoded).
constexpr std::array<std::string_view, 5> kMagics = {
    "iVBORw0KGgo",  // PNG
    "/9j/",         // JPEG (FF D8 FF)
    "R0lGODdh",     // GIF87a
    "R0lGODlh",     // GIF89a
    "UklGR",        // RIFF (WebP, checked once decoded)
};

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

// Where a payload starting at `at` begins a JSON string's content: right
// after its opening quote, or after a data: URI's ";base64,".
bool StartsAString(std::string_view text, size_t at) {
  if (at >= 1 && text[at - 1] == '"') return true;
  constexpr std::string_view kMarker = ";base64,";
  return at >= kMarker.size() && text.substr(at - kMarker.size(), kMarker.size()) == kMarker;
}

// The payload's end (its closing quote), or npos when what follows `at` is
// not plain base64 up to a quote: an escape, a line break or other text
// leaves the string as it is.
size_t PayloadEnd(std::string_view text, size_t at) {
  size_t end = at;
  while (end < text.size() && IsBase64Char(text[end])) ++end;
  size_t pad = 0;
  while (end < text.size() && text[end] == '=' && pad < 2) ++end, ++pad;
  if (end >= text.size() || text[end] != '"' || (end - at) % 4 != 0) return std::string_view::npos;
  return end;
}

}  // namespace

std::vector<InlineImage> FindInlineImages(std::string_view text) {
  std::vector<size_t> starts;
  for (std::string_view magic : kMagics) {
    for (size_t at = text.find(magic); at != std::string_view::npos; at = text.find(magic, at + 1)) {
      if (StartsAString(text, at)) starts.push_back(at);
    }
  }
  std::sort(starts.begin(), starts.end());
  std::vector<InlineImage> images;
  size_t covered = 0;  // a payload's own bytes may hold a magic: never look inside one
  for (size_t at : starts) {
    if (at < covered) continue;
    size_t end = PayloadEnd(text, at);
    if (end == std::string_view::npos) continue;
    std::string_view payload = text.substr(at, end - at);
    auto bytes = Base64Decode(payload);
    if (!bytes.ok() || !ReadImageInfo(*bytes)) continue;
    if (Base64Encode(*bytes) != payload) continue;  // not canonical: could not be rebuilt exactly
    images.push_back({at, end, std::move(*bytes)});
    covered = end;
  }
  return images;
}

}  // namespace forge::store
