// Shared body of the translator fuzz targets: the input is split into a
// client request (the first line) and upstream chunks (one per further line:
// a chunk's JSON, "#" and a piece of content alone as a JSON string's inside,
// or anything else as an event that is not JSON),
// every entry point is driven with them, and
// nothing may crash, hang or throw. Status values are the expected outcome
// for bad input. The documents are parsed as the proxy parses them: a
// request nested deeper than the default --max-json-depth, or a chunk deeper
// than the ceiling, never reaches a translator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_parse.h"
#include "base/json_scan.h"
#include "proxy/client_format.h"

namespace forge::proxy::fuzz {

inline void Drive(ClientFormat& format, const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // First line: the client request. Each further line: one upstream chunk.
  std::vector<std::string_view> lines;
  while (!input.empty()) {
    size_t nl = input.find('\n');
    lines.push_back(input.substr(0, nl));
    if (nl == std::string_view::npos) break;
    input.remove_prefix(nl + 1);
  }
  if (lines.empty()) return;
  auto parse = [](std::string_view text, int max_depth) {
    return forge::ParseJson(text, nullptr, max_depth).value_or(Json(Json::value_t::discarded));
  };
  Json request = parse(lines[0], forge::kDefaultMaxJsonDepth);
  if (!request.is_discarded()) {
    auto chat = format.ToChat(request);
    (void)format.ErrorBody(400, "x");
    if (chat.ok()) format.Finished(*chat, Json::object());
  }
  auto stream = format.NewStream();
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (!line.empty() && line[0] == '#') {
      // A chunk of content alone, taken without its document. The proxy
      // decodes it from a chunk its scanner validated, so it is valid UTF-8:
      // the rest of the line is read as a JSON string's inside.
      Json content = parse("\"" + std::string(line.substr(1)) + "\"", 1);
      std::string out;
      if (content.is_string()) (void)stream->OnContentDelta(content.get<std::string>(), out);
      continue;
    }
    Json chunk = parse(line, forge::kMaxJsonDepthCeiling);
    if (chunk.is_discarded()) {  // an event that is not JSON, relayed as it came
      (void)stream->OnMalformed(std::string(line));
      continue;
    }
    (void)stream->OnChunk(chunk);
    (void)format.FromChat(chunk);  // a chunk is also a (malformed) whole response
  }
  (void)stream->OnEnd();
  (void)stream->OnError("x");
  (void)stream->Assembled().dump();
}

}  // namespace forge::proxy::fuzz
