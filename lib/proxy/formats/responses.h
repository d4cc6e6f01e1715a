// OpenAI Responses (what Codex CLI speaks): POST /v1/responses translated to
// and from chat completions, with the typed, sequence-numbered event stream
// written as the chat chunks arrive, and previous_response_id served from a
// ResponseStateStore.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "proxy/client_format.h"
#include "proxy/formats/response_state.h"

namespace forge::proxy {

// A namespaced tool's chat name (NS__NAME) → its namespace and its own name.
using ToolNamespaces = std::map<std::string, std::pair<std::string, std::string>>;

class ResponsesFormat : public ClientFormat {
 public:
  // Without a store, an in-memory one with default bounds is made.
  explicit ResponsesFormat(std::shared_ptr<ResponseStateStore> state = nullptr);

  std::string name() const override { return "responses"; }
  Result<ChatRequest> ToChat(const Json& request) override;
  Result<Json> FromChat(const Json& chat_response) override;
  std::unique_ptr<StreamTranslator> NewStream() const override;
  // Keeps the conversation under the response id unless the request said store:false.
  void Finished(const ChatRequest& request, const Json& chat_response) override;
  // {"error":{"message":…,"type":…,"param":null,"code":null}}
  Json ErrorBody(int http_status, const std::string& message) const override;

  // The id of a response the proxy makes when it has not translated the
  // request (tests, replays): derived from the upstream completion id.
  static std::string ResponseId(const Json& chat_response_or_chunk);

  // Reasoning text travels back to the client inside encrypted_content (opaque
  // to clients, which replay it verbatim — Codex drops `content` but keeps it).
  static constexpr const char* kReasoningMarker = "forge-reasoning:";

 private:
  std::string IdFor(const Json& chat_response) const;

  std::shared_ptr<ResponseStateStore> state_;
  // Set by ToChat: a fresh id for this call's response, used by FromChat,
  // NewStream and Finished. Upstream completion ids are not unique enough to
  // key conversation state (servers and fakes reuse them); the proxy makes one
  // ClientFormat per call, so this is per call.
  std::string response_id_;
  // Set by ToChat from the request's namespace tools, for the calls coming back.
  ToolNamespaces namespaces_;
};

}  // namespace forge::proxy
