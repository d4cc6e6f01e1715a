// Which client wire format serves which path, and how to make one. The server
// looks a request's path up here; every format (OpenAI chat and completions
// here, Anthropic / Responses / Gemini in lib/proxy/formats/) plugs in by one
// line in each table of format_registry.cpp.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "proxy/client_format.h"

namespace forge::proxy {

struct Route {
  std::string_view method;         // "POST"
  std::string_view path;           // "/v1/chat/completions"; a trailing '*' matches a prefix
  FormatId format;
  std::string_view upstream_path;  // where the translated request goes upstream
  // The upstream's own formats, handled as bytes (pass_through.h), not translated.
  bool passes_through() const { return format == FormatId::kOpenAIChat || completions(); }
  bool completions() const { return format == FormatId::kOpenAICompletions; }
};

// The route for a method and path (the /r/<rollout> prefix already removed), or nullptr.
const Route* FindRoute(std::string_view method, std::string_view path);

// A new ClientFormat.
std::unique_ptr<ClientFormat> MakeClientFormat(FormatId format);
// A new ClientFormat by its name (ClientFormat::name: a recorded call's
// client_format), or nullptr for an unknown name.
std::unique_ptr<ClientFormat> MakeClientFormat(std::string_view name);

// What a call's request target says beyond its route (see ClientUrl): the
// route's format and nothing more, but for the formats whose URL carries
// part of the request.
ClientUrl ReadClientUrl(const Route& route, std::string_view target);

// An error body in the shape of the format a path belongs to (any method;
// a query, and the /r/<rollout> prefix, allowed), or OpenAI's for any other
// path: what a request refused before it reaches its format is answered with.
Json ErrorBodyForPath(std::string_view path, int http_status, const std::string& message);

// The methods a path is served for ("POST", "GET"), or empty when the
// proxy serves nothing there.
std::string_view AllowedMethods(std::string_view path);

}  // namespace forge::proxy
