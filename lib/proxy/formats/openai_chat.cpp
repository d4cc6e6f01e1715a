// OpenAI chat completions: the upstream's own format, so requests and
// responses pass through unchanged (after the proxy strips the fields it
// added); streams are relayed chunk by chunk. Helper calls (opencode's title
// generator) are tagged as side calls like in the translated formats.
#include <utility>

#include "proxy/chat_assembler.h"
#include "proxy/formats/formats.h"
#include "proxy/formats/openai_errors.h"
#include "proxy/formats/wire.h"

namespace forge::proxy {
namespace {

class PassThroughStream : public StreamTranslator {
 public:
  std::string OnChunk(const Json& chunk) override {
    assembler_.Add(chunk);
    return "data: " + chunk.dump() + "\n\n";
  }
  std::string OnEnd() override { return "data: [DONE]\n\n"; }
  std::string OnError(const std::string& message) override {
    // The OpenAI SDKs throw an APIError for a data event carrying "error".
    return "data: " + OpenAIErrorBody(502, message).dump() + "\n\n";
  }
  Json Assembled() const override { return assembler_.Result(); }

 private:
  ChatAssembler assembler_;
};

class OpenAIChatFormat : public ClientFormat {
 public:
  std::string name() const override { return "openai-chat"; }

  Result<ChatRequest> ToChat(const Json& request) override {
    if (!request.is_object()) return Status::InvalidData("request body: must be a JSON object");
    auto messages = request.find("messages");
    if (messages == request.end() || !messages->is_array()) {
      return Status::InvalidData("messages: must be an array of messages");
    }
    for (size_t i = 0; i < messages->size(); ++i) {
      const Json& m = (*messages)[i];
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
        return Status::InvalidData("messages[" + std::to_string(i) + "].role: missing or not a string");
      }
    }
    if (request.contains("stream") && !request["stream"].is_boolean() && !request["stream"].is_null()) {
      return Status::InvalidData("stream: must be a boolean");
    }
    ChatRequest chat;
    chat.body = request;
    chat.stream = JsonTrue(request, "stream");
    chat.side_call = wire::LooksLikeSideCall(request);
    return chat;
  }

  Result<Json> FromChat(const Json& chat_response) override { return chat_response; }
  std::unique_ptr<StreamTranslator> NewStream() const override { return std::make_unique<PassThroughStream>(); }
  Json ErrorBody(int http_status, const std::string& message) const override {
    return OpenAIErrorBody(http_status, message);
  }
};

class OpenAICompletionsFormat : public OpenAIChatFormat {
 public:
  std::string name() const override { return "openai-completions"; }

  Result<ChatRequest> ToChat(const Json& request) override {
    if (!request.is_object()) return Status::InvalidData("request body: must be a JSON object");
    auto prompt = request.find("prompt");
    if (prompt == request.end() || !(prompt->is_string() || prompt->is_array())) {
      return Status::InvalidData("prompt: must be a string, a list of strings or a list of token ids");
    }
    if (request.contains("stream") && !request["stream"].is_boolean() && !request["stream"].is_null()) {
      return Status::InvalidData("stream: must be a boolean");
    }
    ChatRequest chat;
    chat.body = request;
    chat.stream = JsonTrue(request, "stream");
    return chat;
  }
};

}  // namespace

std::unique_ptr<ClientFormat> NewOpenAIChatFormat() { return std::make_unique<OpenAIChatFormat>(); }
std::unique_ptr<ClientFormat> NewOpenAICompletionsFormat() {
  return std::make_unique<OpenAICompletionsFormat>();
}

}  // namespace forge::proxy
