// Gemini generateContent (what Gemini CLI speaks): models/{m}:generateContent,
// :streamGenerateContent?alt=sse and :countTokens, translated to and from chat
// completions. Gemini function calls carry no ids, so the proxy makes them.
#pragma once

#include <string>
#include <string_view>

#include "proxy/client_format.h"

namespace forge::proxy {

// What the URL says: "/v1beta/models/gemini-x:streamGenerateContent?alt=sse".
struct GeminiRoute {
  std::string model;   // "gemini-x"
  std::string method;  // generateContent | streamGenerateContent | countTokens
  bool stream = false;
  bool sse = false;    // alt=sse; without it the stream is one JSON array
};

class GeminiFormat : public ClientFormat {
 public:
  // Parses a request target (path and query). Unknown shapes are InvalidData.
  static Result<GeminiRoute> ParseRoute(std::string_view target);
  // What the URL makes of a call: countTokens is its own (side-call) format;
  // the model, the method's stream flag and alt join the body as the
  // top-level fields ToChat reads; a stream without alt=sse is one JSON
  // array; and no keepalive comments, ever.
  static ClientUrl ReadUrl(std::string_view target);

  std::string name() const override { return "gemini"; }
  // The body as sent, with the route's model, stream flag and alt ("sse" or
  // "json"; absent means sse) added by the proxy as top-level "model" /
  // "stream" / "alt" fields; see ToChat(route, body).
  Result<ChatRequest> ToChat(const Json& request) override;
  Result<ChatRequest> ToChat(const GeminiRoute& route, const Json& request);
  Result<Json> FromChat(const Json& chat_response) override;
  // The stream the last ToChat asked for: SSE (alt=sse), or one JSON array
  // written element by element as the chunks arrive.
  std::unique_ptr<StreamTranslator> NewStream() const override;
  // SSE, or application/json for the JSON-array stream (no keepalive comments there).
  std::string StreamContentType() const { return sse_ ? "text/event-stream" : "application/json"; }
  // {"error":{"code":400,"message":…,"status":"INVALID_ARGUMENT"}}
  Json ErrorBody(int http_status, const std::string& message) const override;

  // :countTokens (contents, or a generateContentRequest): a one-token side call
  // whose usage.prompt_tokens is the count, or a local estimate.
  Result<ChatRequest> CountTokensToChat(const GeminiRoute& route, const Json& request);
  static Result<Json> CountTokensFromChat(const Json& chat_response);  // {"totalTokens": N}
  Result<Json> CountTokensEstimate(const GeminiRoute& route, const Json& request);

  static std::string StatusName(int http_status);  // 400 → INVALID_ARGUMENT …
  static std::string FinishReason(const Json& chat_finish_reason);

  // A reply with reasoning carries it, base64 after this marker, as the
  // thoughtSignature of its first answer text part and first call: Gemini CLI
  // drops thought parts from the history it resends but keeps signatures, so
  // ToChat gets the reasoning back from it.
  static constexpr const char* kReasoningMarker = "forge-reasoning:";

 private:
  bool sse_ = true;
};

}  // namespace forge::proxy
