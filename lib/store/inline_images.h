// Images carried inside a JSON text as base64 strings, the way every wire
// format sends them: OpenAI image_url and Responses input_image data: URIs
// ("data:image/png;base64,<payload>"), Anthropic image blocks'
// source.data and Gemini inlineData.data (the payload alone). Found by
// their bytes, not by field names, so a format forge does not know yet is
// covered too. The store keeps each image's bytes once, by content
// (content.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace forge::store {

struct InlineImage {
  size_t begin = 0, end = 0;  // the payload's bytes in the text (inside its JSON string)
  std::string bytes;          // the image, decoded
};

// The base64 payloads in text, in order, that are canonical base64 (standard
// alphabet, padded, no line breaks or escapes: re-encoding the bytes gives
// the payload back, so the text is rebuilt exactly) and decode to a PNG,
// JPEG, GIF or WebP image whose header gives its size. Anything else is left
// where it is.
std::vector<InlineImage> FindInlineImages(std::string_view text);

}  // namespace forge::store
