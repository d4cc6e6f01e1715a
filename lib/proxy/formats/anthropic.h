// Anthropic Messages (what Claude Code speaks): POST /v1/messages and
// /v1/messages/count_tokens, translated to and from chat completions, with the
// typed event stream written as the chat chunks arrive.
#pragma once

#include "proxy/client_format.h"

namespace forge::proxy {

class AnthropicFormat : public ClientFormat {
 public:
  std::string name() const override { return "anthropic"; }
  Result<ChatRequest> ToChat(const Json& request) override;
  Result<Json> FromChat(const Json& chat_response) override;
  std::unique_ptr<StreamTranslator> NewStream() const override;
  // {"type":"error","error":{"type":"invalid_request_error"|…,"message":…}}
  Json ErrorBody(int http_status, const std::string& message) const override;

  // /v1/messages/count_tokens: the same body without max_tokens. The chat
  // request asks the upstream for one token so its usage.prompt_tokens is the
  // exact count; it is always a side call.
  Result<ChatRequest> CountTokensToChat(const Json& request);
  // {"input_tokens": N} from the upstream's answer to CountTokensToChat.
  static Result<Json> CountTokensFromChat(const Json& chat_response);
  // {"input_tokens": N} estimated locally, for when no upstream is asked.
  Result<Json> CountTokensEstimate(const Json& request);

  // The Anthropic error type for an HTTP status (400 → invalid_request_error …).
  static std::string ErrorType(int http_status);
  // chat finish_reason (+ vLLM stop_reason) → Anthropic stop_reason.
  static std::string StopReason(const Json& finish_reason, bool has_tool_calls);
};

}  // namespace forge::proxy
