// A content blob as the store keeps it: the part's JSON text, or that text
// compressed with zstd when that saves a tenth or more. A zstd frame starts
// with bytes no JSON text starts with (0x28 0xB5 0x2F 0xFD; JSON starts with
// a value or whitespace), so both kinds read back without a flag, and a store
// written before blobs were compressed reads as it did.
//
// Why: a harness's conversation is text (prompts, code, tool output) that
// zstd shrinks three to five times, and a translated call (Claude Code's
// Anthropic Messages) stores its conversation twice, as the harness sent it
// and as the chat request the model saw.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace forge::store {

// The bytes to store for a part's text.
std::string PackBlob(std::string_view text);
// The part's text from stored bytes; InvalidData when a compressed blob is corrupt.
Result<std::string> UnpackBlob(std::string_view stored);

}  // namespace forge::store
