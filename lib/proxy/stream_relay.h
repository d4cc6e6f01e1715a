// The common chunk of a chat stream relayed by the byte-level pass-through
// (pass_through.h) in one walk over its validated text: most of a stream's
// chunks are one piece of content for one choice, and each used to be read
// three times (capture and strip, the assembler's look at the stripped
// copy, a document for anything else) and copied into new strings twice.
// Here the member spans of one validation give the tokens to capture, the
// members to cut, the content (and kept logprobs) to assemble, and the
// bytes the client gets are written straight into the outgoing buffer.
#pragma once

#include <string>
#include <string_view>

#include "proxy/chat_assembler.h"
#include "proxy/token_capture.h"

namespace forge::proxy {

// A chat chunk that is a piece of content for choice 0 after the stream's
// first chunk: head members the first set, a delta of at most "content",
// logprobs null or {"content": [...]}, token_ids, no finish, no usage. For
// it: choice 0's tokens go into tokens, "data: " + the chunk as
// CaptureAndStrip(data, wants, drop_usage) gives its text + "\n\n" is
// appended to out, and the content is folded into assembled, as Add would.
// Returns false, having changed nothing, for any other chunk (not JSON
// among them): the caller takes it the full way.
bool RelayContentChunk(std::string_view data, const CaptureWants& wants, bool drop_usage, CapturedTokens& tokens,
                       ChatAssembler& assembled, std::string& out);

}  // namespace forge::proxy
