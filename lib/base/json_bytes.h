// Byte-level helpers shared by the JSON reader (json_scan.h) and writer
// (json_dump.h): both walk string bytes in long plain runs.
#pragma once

#include <cstddef>

namespace forge {

// The end of the run of plain string bytes from i: ASCII and neither a
// quote, a backslash nor a control character (SIMD where there is SSE2).
size_t SkipPlainJsonBytes(const unsigned char* p, size_t i, size_t n);

// The length (2 to 4) of the well-formed UTF-8 sequence at p[i], or 0 if
// there is none: no overlong forms, surrogates or code points past U+10FFFF.
size_t Utf8SequenceLength(const unsigned char* p, size_t i, size_t n);

}  // namespace forge
