// Parsing JSON text into a document, as nlohmann::json::parse does, at the
// speed of the validator. nlohmann's lexer reads a string byte by byte,
// appending each to a buffer: a 200 KB request (a harness resends its whole
// conversation every call) took ~16 million instructions, ~2 ms, on every
// translated call (Claude Code's Anthropic Messages among them). Here the
// text is validated first (json_scan.h), then each string is copied a run at
// a time, escapes decoded where there are any.
//
// The document is the one nlohmann builds: the same values and number types
// (a non-negative integer is unsigned, a negative one signed, either one a
// double when it does not fit 64 bits, as is any number with a fraction or
// an exponent), the last of duplicate keys kept, a leading byte-order mark
// skipped and a NUL byte after the value taken as the end of the input.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace forge {

// The document text holds, or nullopt with *error (if given) saying what is
// wrong and at which byte (JsonSyntaxError's words).
// max_depth > 0: deeper nesting is an error (see JsonSyntaxError).
std::optional<nlohmann::json> ParseJson(std::string_view text, std::string* error = nullptr, int max_depth = 0);
// The same as nlohmann::json::parse(text, nullptr, false): a discarded value
// when text is not JSON.
inline nlohmann::json ParseJsonOrDiscarded(std::string_view text) {
  return ParseJson(text).value_or(nlohmann::json(nlohmann::json::value_t::discarded));
}

}  // namespace forge
