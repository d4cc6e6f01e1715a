// The proxy speaks several client wire formats but always talks to the
// policy server in OpenAI chat-completions form. A ClientFormat translates a
// client's request into a chat request, and the chat response (whole, or as a
// stream of chunks) back into what the client expects, event by event, as the
// upstream tokens arrive — never buffered and replayed.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::proxy {

using Json = nlohmann::json;

// What a translated request carries besides the chat body.
struct ChatRequest {
  Json body;              // OpenAI chat-completions request to send upstream
  bool stream = false;    // the client asked for a stream
  bool side_call = false; // token counting, titles, helper calls: kept out of the trajectory
  // Per-call data a format wants handed back in Finished() (e.g. the Responses
  // format's `store` flag); null for formats that keep no state.
  Json state;
};

// The client wire formats (format_registry.cpp names each and makes it).
enum class FormatId {
  kOpenAIChat,
  kOpenAICompletions,
  kAnthropic,
  kAnthropicCountTokens,  // /v1/messages/count_tokens
  kResponses,
  kGemini,
  kGeminiCountTokens,  // models/{m}:countTokens
};

// What a call's URL says beyond its route: for most formats nothing, for
// Gemini, which names the model and the method there, part of the request.
struct ClientUrl {
  FormatId format = FormatId::kOpenAIChat;  // the format that serves the call
  Json fields;              // top-level fields the URL adds to the body; null: none
  const char* stream_content_type = "text/event-stream";
  bool keepalive_comments = true;  // a slow stream may send SSE comments before its first event
  Status status;                   // not ok: the URL names nothing served (answered 404)
};

// Writes the client-visible stream for one call. Each On* returns the bytes
// to send to the client now (SSE frames, or nothing); the proxy writes them
// at once.
class StreamTranslator {
 public:
  virtual ~StreamTranslator() = default;
  // One upstream chat.completion.chunk (already stripped of fields the client did not ask for).
  virtual std::string OnChunk(const Json& chunk) = 0;
  // A chunk that is nothing but a piece of content (ContentDeltaText in
  // pass_through.h: most of a stream), taken without its document when the
  // translator can: appends what OnChunk would return to out, and returns
  // true. False (the default; also before the stream has started) leaves
  // the chunk to OnChunk.
  virtual bool OnContentDelta(const std::string& /*content*/, std::string& /*out*/) { return false; }
  // The upstream stream ended normally ([DONE]).
  virtual std::string OnEnd() = 0;
  // The upstream failed after the stream began: a well-formed error event in
  // the client's own format, ending the stream.
  virtual std::string OnError(const std::string& message) = 0;
  // An upstream event that is not JSON, relayed as it came in the event the
  // client's format would carry it in (what a server of the client's own API
  // with that bug would send). The default: a bare data line.
  virtual std::string OnMalformed(const std::string& data) { return "data: " + data + "\n\n"; }
  // The response as the client would have received it unstreamed, for the record.
  virtual Json Assembled() const = 0;
};

class ClientFormat {
 public:
  virtual ~ClientFormat() = default;
  // "openai-chat", "openai-completions", "anthropic", "responses", "gemini".
  virtual std::string name() const = 0;
  // Bad client input is Status::InvalidData with a message naming the field.
  virtual Result<ChatRequest> ToChat(const Json& client_request) = 0;
  virtual Result<Json> FromChat(const Json& chat_response) = 0;
  virtual std::unique_ptr<StreamTranslator> NewStream() const = 0;
  // Called by the proxy once a call has succeeded, with the chat-form response
  // (assembled from the chunks for a stream). Formats with server-side state
  // (Responses' previous_response_id) remember the exchange here.
  virtual void Finished(const ChatRequest& /*request*/, const Json& /*chat_response*/) {}
  // An error body in the client's own error shape, for the given HTTP status.
  virtual Json ErrorBody(int http_status, const std::string& message) const = 0;
};

}  // namespace forge::proxy
