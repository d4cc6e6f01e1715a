// What a call asks (the decode stage, call_handler.h): its URL and body read
// by the client's format. A request in the upstream's own format (OpenAI
// chat and completions) is read as bytes (pass_through.h); any other is
// parsed and translated to a chat request.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "proxy/client_format.h"
#include "proxy/format_registry.h"
#include "proxy/outcome.h"
#include "proxy/pass_through.h"

namespace forge::proxy {

struct DecodedCall {
  // The URL read and the format made: what a refusal of the call needs.
  DecodedCall(const Route& route, std::string_view target);

  const Route& route;
  ClientUrl url;
  std::unique_ptr<ClientFormat> format;
  std::optional<PassThroughRequest> raw;  // a request read as bytes
  Json client_request;                    // a translated one, as parsed
  ChatRequest chat;                       // its chat form; of a request read as bytes, stream and side_call

  // A request read as bytes (Decode, or cut_through.h as it arrived).
  void TakeRaw(PassThroughRequest read);
};

struct DecodeLimits {
  int max_json_depth;      // --max-json-depth
  int64_t max_tokens_cap;  // --max-tokens-cap (translated requests)
};

// Reads body into call: as bytes when as_bytes (a pass-through route whose
// answer comes from an upstream; replay matches a request by its document),
// else parsed and translated. A refusal (400, or 404 for a URL that names
// nothing served) says why not.
std::optional<Refusal> Decode(std::string_view body, bool as_bytes, const DecodeLimits& limits, DecodedCall& call);

}  // namespace forge::proxy
