#include "proxy/decode.h"

#include "base/json_parse.h"
#include "proxy/request_limits.h"

namespace forge::proxy {

DecodedCall::DecodedCall(const Route& route, std::string_view target)
    : route(route), url(ReadClientUrl(route, target)), format(MakeClientFormat(url.format)) {}

void DecodedCall::TakeRaw(PassThroughRequest read) {
  raw = std::move(read);
  chat.stream = raw->stream;
  chat.side_call = raw->side_call;
}

std::optional<Refusal> Decode(std::string_view body, bool as_bytes, const DecodeLimits& limits, DecodedCall& call) {
  if (as_bytes) {
    auto read = ReadPassThroughRequest(body, call.route.completions(), limits.max_json_depth);
    if (!read.ok()) return Refusal{400, read.status().message(), {}};
    call.TakeRaw(std::move(*read));
    return std::nullopt;
  }
  // (ParseJson, not nlohmann's parser: a 200 KB conversation in ~0.1 ms, not ~2.)
  std::string parse_error;
  // Nesting is bounded here, so the translations, which recurse, never meet
  // a document deeper than --max-json-depth.
  if (std::optional<Json> parsed = ParseJson(body, &parse_error, limits.max_json_depth)) {
    call.client_request = std::move(*parsed);
  } else {
    parse_error = RequestJsonError(parse_error);
  }
  if (!parse_error.empty()) return Refusal{400, std::move(parse_error), {}};
  if (!call.url.status.ok()) return Refusal{404, call.url.status.message(), {}};
  // The document itself, not a copy (a 200 KB conversation), unless fields
  // from the URL join it (Gemini's model and method).
  const Json* translated_input = &call.client_request;
  Json with_url_fields;
  if (call.url.fields.is_object() && call.client_request.is_object()) {
    with_url_fields = call.client_request;
    with_url_fields.update(call.url.fields);
    translated_input = &with_url_fields;
  }
  auto translated = call.format->ToChat(*translated_input);
  if (!translated.ok()) return Refusal{400, translated.status().message(), {}};
  call.chat = std::move(*translated);
  // Chat and completions requests go as bytes and keep their max_tokens.
  CapMaxTokens(call.chat.body, limits.max_tokens_cap);
  return std::nullopt;
}

}  // namespace forge::proxy
