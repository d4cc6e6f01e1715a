// Serialising a document to exactly the bytes the store has always written,
// nlohmann::json::dump(-1, ' ', false, error_handler_t::replace): compact,
// keys in the document's order, the same escapes, invalid UTF-8 replaced by
// U+FFFD. nlohmann decodes every string byte by byte, which costs about a
// millisecond for a 200 KB conversation; a translated call (Claude Code's
// Anthropic Messages) dumped its request three times on its path. Here plain
// runs of a string are copied sixteen bytes at a time.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace forge {

std::string DumpJson(const nlohmann::json& value);
void AppendJson(const nlohmann::json& value, std::string& out);
// Appends s as a JSON string, as the dump above writes one (\" \\ \b \f \n
// \r \t, other control characters as \u00xx, UTF-8 as it is): for the
// per-token events the proxy writes without building a document.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace forge
