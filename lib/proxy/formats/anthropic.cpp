#include "proxy/formats/anthropic.h"

#include "base/hash.h"
#include "base/json_dump.h"
#include "base/json_field.h"
#include "proxy/formats/formats.h"
#include "proxy/formats/translated_stream.h"
#include "proxy/formats/wire.h"

namespace forge::proxy {

using namespace wire;

namespace {

// ---- request: Messages → chat ------------------------------------------------

Json ImagePart(const Json& block, const std::string& path) {
  const Json& source = Require(block, "source", path);
  std::string at = Path(path, "source");
  std::string type = RequireString(source, "type", at);
  std::string url;
  if (type == "base64") {
    url = "data:" + RequireString(source, "media_type", at) + ";base64," +
          RequireString(source, "data", at);
  } else if (type == "url") {
    url = RequireString(source, "url", at);
  } else {
    Fail(Path(at, "type"), "unsupported image source \"" + type + "\"");
  }
  return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
}

// system: a string or text blocks (Claude Code sends three, with cache_control).
std::string SystemText(const Json& system, const std::string& path) {
  if (system.is_string()) return system.get<std::string>();
  if (!system.is_array()) Fail(path, "must be a string or an array of text blocks");
  std::string text;
  for (size_t i = 0; i < system.size(); ++i) {
    std::string at = Path(path, i);
    if (!system[i].is_object()) Fail(at, "must be a text block");
    std::string type = RequireString(system[i], "type", at);
    if (type != "text") Fail(Path(at, "type"), "must be \"text\", not \"" + type + "\"");
    if (i > 0) text += "\n\n";
    text += RequireString(system[i], "text", at);
  }
  return text;
}

// Plain string when the parts are one text, else the parts array.
Json PartsContent(Json parts) {
  if (parts.size() == 1 && parts[0]["type"] == "text") return parts[0]["text"];
  return parts;
}

Json ToolResultContent(const Json& block, const std::string& path) {
  const Json* content = Find(block, "content");
  if (!content) return "";
  if (content->is_string()) return *content;
  std::string at = Path(path, "content");
  if (!content->is_array()) Fail(at, "must be a string or an array of blocks");
  Json parts = Json::array();
  bool only_text = true;
  std::string text;
  ForEachTyped(*content, at, "content block", [&](const Json& b, const std::string& bat, const std::string& type) {
    if (type == "text") {
      std::string t = RequireString(b, "text", bat);
      if (!text.empty()) text += "\n";
      text += t;
      parts.push_back({{"type", "text"}, {"text", t}});
    } else if (type == "image") {
      only_text = false;
      parts.push_back(ImagePart(b, bat));
    } else {
      Fail(Path(bat, "type"), "unsupported tool_result block \"" + type + "\"");
    }
  });
  if (only_text) return text;
  return parts;
}

void UserTurn(const Json& content, const std::string& path, Json& out) {
  if (content.is_string()) {
    out.push_back({{"role", "user"}, {"content", content}});
    return;
  }
  if (!content.is_array()) Fail(path, "must be a string or an array of content blocks");
  Json parts = Json::array();
  ForEachTyped(content, path, "content block", [&](const Json& block, const std::string& at, const std::string& type) {
    if (type == "text") {
      parts.push_back({{"type", "text"}, {"text", RequireString(block, "text", at)}});
    } else if (type == "image") {
      parts.push_back(ImagePart(block, at));
    } else if (type == "tool_result") {
      // Tool results answer the previous assistant turn's tool_calls, so they
      // go first, each as its own tool message, before any text of this turn.
      Json tool = {{"role", "tool"},
                   {"tool_call_id", RequireString(block, "tool_use_id", at)},
                   {"content", ToolResultContent(block, at)}};
      if (OptBool(block, "is_error", at, false)) tool["is_error"] = true;
      out.push_back(std::move(tool));
    } else {
      Fail(Path(at, "type"), "unsupported user content block \"" + type + "\"");
    }
  });
  if (!parts.empty()) out.push_back({{"role", "user"}, {"content", PartsContent(parts)}});
}

void AssistantTurn(const Json& content, const std::string& path, Json& out) {
  if (content.is_string()) {
    out.push_back({{"role", "assistant"}, {"content", content}});
    return;
  }
  if (!content.is_array()) Fail(path, "must be a string or an array of content blocks");
  std::string text, reasoning;
  bool has_text = false, has_reasoning = false;
  Json calls = Json::array();
  ForEachTyped(content, path, "content block", [&](const Json& block, const std::string& at, const std::string& type) {
    if (type == "text") {
      text += RequireString(block, "text", at);
      has_text = true;
    } else if (type == "thinking") {
      reasoning += RequireString(block, "thinking", at);
      has_reasoning = true;
    } else if (type == "redacted_thinking") {
      // Opaque to anyone but Anthropic; there is nothing to show the policy.
    } else if (type == "tool_use") {
      const Json& input = Require(block, "input", at);
      if (!input.is_object()) Fail(Path(at, "input"), "must be an object");
      calls.push_back({{"id", RequireString(block, "id", at)},
                       {"type", "function"},
                       {"function",
                        {{"name", RequireString(block, "name", at)}, {"arguments", input.dump()}}}});
    } else {
      Fail(Path(at, "type"), "unsupported assistant content block \"" + type + "\"");
    }
  });
  Json message = {{"role", "assistant"}};
  message["content"] = has_text || calls.empty() ? Json(text) : Json();
  if (has_reasoning) message["reasoning_content"] = reasoning;
  if (!calls.empty()) message["tool_calls"] = calls;
  out.push_back(std::move(message));
}

Json Tools(const Json& tools) {
  if (!tools.is_array()) Fail("tools", "must be an array");
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    std::string at = Path("tools", i);
    if (!tool.is_object()) Fail(at, "must be an object");
    std::string type = OptString(tool, "type", at, "custom");
    if (!Find(tool, "input_schema")) {
      // Anthropic-hosted tools (web_search_2025…, bash_2025…) have no schema a
      // policy model could follow; they are left out rather than invented.
      if (type != "custom") continue;
      Fail(Path(at, "input_schema"), "required");
    }
    const Json& schema = tool["input_schema"];
    if (!schema.is_object()) Fail(Path(at, "input_schema"), "must be an object");
    Json fn = {{"name", RequireString(tool, "name", at)}, {"parameters", schema}};
    if (std::string d = OptString(tool, "description", at); !d.empty()) fn["description"] = d;
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out;
}

void ToolChoice(const Json& choice, Json& body) {
  if (!choice.is_object()) Fail("tool_choice", "must be an object");
  std::string type = RequireString(choice, "type", "tool_choice");
  if (type == "auto") {
    body["tool_choice"] = "auto";
  } else if (type == "any") {
    body["tool_choice"] = "required";
  } else if (type == "none") {
    body["tool_choice"] = "none";
  } else if (type == "tool") {
    body["tool_choice"] = {{"type", "function"},
                           {"function", {{"name", RequireString(choice, "name", "tool_choice")}}}};
  } else {
    Fail("tool_choice.type", "must be auto, any, tool or none, not \"" + type + "\"");
  }
  if (OptBool(choice, "disable_parallel_tool_use", "tool_choice", false)) {
    body["parallel_tool_calls"] = false;
  }
}

ChatRequest Translate(const Json& request, bool count_tokens) {
  if (!request.is_object()) Fail("body", "must be a JSON object");
  ChatRequest out;
  Json& body = out.body;
  body = Json::object();
  body["model"] = RequireString(request, "model", "");
  if (!count_tokens) {
    const Json& max_tokens = Require(request, "max_tokens", "");
    if (!max_tokens.is_number_integer() || max_tokens.get<int64_t>() < 1) {
      Fail("max_tokens", "must be a positive integer");
    }
    body["max_tokens"] = max_tokens;
  }
  Json messages = Json::array();
  if (const Json* system = Find(request, "system")) {
    messages.push_back({{"role", "system"}, {"content", SystemText(*system, "system")}});
  }
  const Json& turns = RequireArray(request, "messages", "");
  for (size_t i = 0; i < turns.size(); ++i) {
    std::string at = Path("messages", i);
    if (!turns[i].is_object()) Fail(at, "must be an object");
    std::string role = RequireString(turns[i], "role", at);
    const Json& content = Require(turns[i], "content", at);
    std::string content_at = Path(at, "content");
    if (role == "user") {
      UserTurn(content, content_at, messages);
    } else if (role == "assistant") {
      AssistantTurn(content, content_at, messages);
    } else if (role == "system") {
      // Claude Code's mid-conversation system turn (environment, deferred tools).
      messages.push_back({{"role", "system"}, {"content", SystemText(content, content_at)}});
    } else {
      Fail(Path(at, "role"), "must be user, assistant or system, not \"" + role + "\"");
    }
  }
  body["messages"] = std::move(messages);
  if (const Json* tools = Find(request, "tools")) {
    Json chat_tools = Tools(*tools);
    if (!chat_tools.empty()) body["tools"] = std::move(chat_tools);
  }
  if (const Json* choice = Find(request, "tool_choice")) ToolChoice(*choice, body);
  if (const Json* stop = Find(request, "stop_sequences")) {
    if (!stop->is_array()) Fail("stop_sequences", "must be an array of strings");
    for (size_t i = 0; i < stop->size(); ++i) {
      if (!(*stop)[i].is_string()) Fail(Path("stop_sequences", i), "must be a string");
    }
    if (!stop->empty()) body["stop"] = *stop;
  }
  CopyNumber(request, "temperature", body, "temperature", "");
  CopyNumber(request, "top_p", body, "top_p", "");
  CopyNumber(request, "top_k", body, "top_k", "");  // vLLM and SGLang take top_k
  if (const Json* metadata = Find(request, "metadata")) {
    if (!metadata->is_object()) Fail("metadata", "must be an object");
    if (std::string user = OptString(*metadata, "user_id", "metadata"); !user.empty()) {
      body["user"] = user;
    }
  }
  out.stream = OptBool(request, "stream", "", false);
  if (count_tokens) out.stream = false;
  if (out.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  out.side_call = count_tokens || LooksLikeSideCall(body);
  return out;
}

// ---- response: chat → Messages ----------------------------------------------

Json ToolUseInput(const std::string& arguments) {
  if (arguments.empty()) return Json::object();
  Json input = Json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  // The raw arguments stay in the chat-form record; the client gets an object.
  return input.is_object() ? input : Json::object();
}

std::string ToolUseId(const Json& call, const std::string& message_id, size_t index) {
  std::string id = JsonText(call, "id");
  return id.empty() ? DerivedId("toolu_", message_id + "_" + std::to_string(index)) : id;
}

Json Usage(const Json& chat_usage, int64_t prompt_tokens_hint) {
  int64_t prompt = prompt_tokens_hint < 0 ? 0 : prompt_tokens_hint;
  int64_t completion = 0, cached = 0;
  if (chat_usage.is_object()) {
    prompt = JsonInt(chat_usage, "prompt_tokens", prompt);
    completion = JsonInt(chat_usage, "completion_tokens", 0);
    if (const Json* details = Find(chat_usage, "prompt_tokens_details")) {
      cached = JsonInt(*details, "cached_tokens", 0);
    }
  }
  // Anthropic counts cache reads apart from input_tokens.
  return {{"input_tokens", prompt - cached},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached},
          {"output_tokens", completion}};
}

Json StopSequence(const Json& choice) {
  const Json* reason = Find(choice, "stop_reason");  // vLLM: the stop string matched
  if (choice.value("finish_reason", Json()) == "stop" && reason && reason->is_string()) {
    return *reason;
  }
  return nullptr;
}

// The policy's thinking carries no provider signature. Clients expect one
// (Claude Code sends thinking blocks back with it), so the proxy signs the
// text itself: the same text always gets the same signature, streamed or not.
std::string ThinkingSignature(const std::string& thinking) {
  return "forge:" + Sha256Hex(thinking).substr(0, 32);
}

Json MessageFromChat(const Json& chat) {
  const Json& message = ChatMessage(chat);
  const Json& choice = chat["choices"][0];
  std::string id = DerivedId("msg_", JsonText(chat, "id"));
  Json content = Json::array();
  if (const Json* r = ReasoningField(message); r && !r->get<std::string>().empty()) {
    content.push_back({{"type", "thinking"}, {"thinking", *r}, {"signature", ThinkingSignature(*r)}});
  }
  if (const Json* c = Find(message, "content")) {
    std::string text = ContentText(*c);
    if (!text.empty()) content.push_back({{"type", "text"}, {"text", text}});
  }
  const Json* calls = Find(message, "tool_calls");
  bool has_calls = calls && calls->is_array() && !calls->empty();
  if (has_calls) {
    for (size_t i = 0; i < calls->size(); ++i) {
      const Json& call = (*calls)[i];
      std::string at = Path("choices[0].message.tool_calls", i);
      if (!call.is_object()) Fail(at, "must be an object");
      const Json& fn = Require(call, "function", at);
      content.push_back({{"type", "tool_use"},
                         {"id", ToolUseId(call, id, i)},
                         {"name", RequireString(fn, "name", Path(at, "function"))},
                         {"input", ToolUseInput(OptString(fn, "arguments", Path(at, "function")))}});
    }
  }
  Json stop_sequence = StopSequence(choice);
  std::string stop_reason =
      AnthropicFormat::StopReason(choice.value("finish_reason", Json()), has_calls);
  if (stop_reason == "end_turn" && !stop_sequence.is_null()) stop_reason = "stop_sequence";
  return {{"id", id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", JsonText(chat, "model")},
          {"content", content},
          {"stop_reason", stop_reason},
          {"stop_sequence", stop_reason == "stop_sequence" ? stop_sequence : Json()},
          {"usage", Usage(chat.value("usage", Json()), -1)}};
}

// ---- stream: chat chunks → Messages events -------------------------------------

class AnthropicStream : public FragmentedToolStream {
 public:
  Json Assembled() const override {
    Json message = MessageFromChat(acc().Response());
    message["usage"] = Usage(acc().Response().value("usage", Json()), acc().prompt_tokens());
    return message;
  }

 private:
  enum class Block { kNone, kText, kThinking, kTool };

  std::string Opening() override {
    message_id_ = DerivedId("msg_", acc().id());
    Json message = {{"id", message_id_},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", acc().model()},
                    {"content", Json::array()},
                    {"stop_reason", nullptr},
                    {"stop_sequence", nullptr},
                    {"usage", Usage(Json(), acc().prompt_tokens())}};
    return SseFrame("message_start", {{"type", "message_start"}, {"message", message}}) +
           SseFrame("ping", {{"type", "ping"}});
  }

  std::string Open(Block kind, Json content_block) {
    std::string out = CloseOpen();
    open_ = kind;
    open_index_ = next_index_++;
    out += SseFrame("content_block_start", {{"type", "content_block_start"},
                                            {"index", open_index_},
                                            {"content_block", std::move(content_block)}});
    return out;
  }

  std::string Closing() override {
    Json message = MessageFromChat(acc().Response());
    Json usage = Usage(acc().Response().value("usage", Json()), acc().prompt_tokens());
    return SseFrame("message_delta",
                    {{"type", "message_delta"},
                     {"delta",
                      {{"stop_reason", message["stop_reason"]},
                       {"stop_sequence", message["stop_sequence"]}}},
                     {"usage", usage}}) +
           SseFrame("message_stop", {{"type", "message_stop"}});
  }

  std::string Failure(const std::string& message) override {
    return SseFrame("error", {{"type", "error"},
                              {"error", {{"type", "api_error"}, {"message", message}}}});
  }

  std::string Malformed(const std::string& data) override {
    return "event: content_block_delta\ndata: " + data + "\n\n";
  }

  std::string CloseOpen() override {
    if (open_ == Block::kNone) return "";
    std::string out;
    if (open_ == Block::kThinking) {  // as Anthropic does: the signature last, just before the stop
      out = BlockDelta(open_index_, {{"type", "signature_delta"}, {"signature", ThinkingSignature(thinking_)}});
      thinking_.clear();
    }
    open_ = Block::kNone;
    return out + SseFrame("content_block_stop", {{"type", "content_block_stop"}, {"index", open_index_}});
  }

  std::string BlockDelta(int index, Json delta) {
    return SseFrame("content_block_delta",
                    {{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}});
  }

  // A token's delta, {"type": type, key: value}, written without building
  // the document: the bytes BlockDelta makes of it (nlohmann sorts the keys,
  // and each key here sorts before "type").
  std::string TextBlockDelta(int index, std::string_view type, std::string_view key, const std::string& value) {
    std::string out = "event: content_block_delta\ndata: {\"delta\":{\"";
    out += key;
    out += "\":";
    AppendJsonString(out, value);
    out += ",\"type\":\"";
    out += type;
    out += "\"},\"index\":";
    out += std::to_string(index);
    out += ",\"type\":\"content_block_delta\"}\n\n";
    return out;
  }

  std::string Content(const std::string& text) override {
    if (text.empty()) return "";
    std::string out;
    if (open_ != Block::kText) out += Open(Block::kText, {{"type", "text"}, {"text", ""}});
    out += TextBlockDelta(open_index_, "text_delta", "text", text);
    return out;
  }

  std::string Reasoning(const std::string& text) override {
    std::string out;
    if (open_ != Block::kThinking) {
      out += Open(Block::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
    }
    out += TextBlockDelta(open_index_, "thinking_delta", "thinking", text);
    thinking_ += text;
    return out;
  }

  std::string OpenTool(const Json& call, size_t index, const std::string& name, int& at) override {
    std::string out = Open(Block::kTool, {{"type", "tool_use"},
                                          {"id", ToolUseId(call, message_id_, index)},
                                          {"name", name},
                                          {"input", Json::object()}});
    at = open_index_;
    return out;
  }

  std::string ToolArguments(int at, const std::string& fragment) override {
    return TextBlockDelta(at, "input_json_delta", "partial_json", fragment);
  }

  std::string message_id_;
  Block open_ = Block::kNone;
  int open_index_ = -1, next_index_ = 0;
  std::string thinking_;  // the open thinking block's text so far, for its signature
};

}  // namespace

Result<ChatRequest> AnthropicFormat::ToChat(const Json& request) {
  return Guard([&]() -> Result<ChatRequest> { return Translate(request, false); });
}

Result<Json> AnthropicFormat::FromChat(const Json& chat_response) {
  return GuardUpstream([&]() -> Result<Json> { return MessageFromChat(chat_response); });
}

std::unique_ptr<StreamTranslator> AnthropicFormat::NewStream() const {
  return std::make_unique<AnthropicStream>();
}

Json AnthropicFormat::ErrorBody(int http_status, const std::string& message) const {
  return {{"type", "error"}, {"error", {{"type", ErrorType(http_status)}, {"message", message}}}};
}

Result<ChatRequest> AnthropicFormat::CountTokensToChat(const Json& request) {
  return Guard([&]() -> Result<ChatRequest> {
    ChatRequest out = Translate(request, true);
    out.body["max_tokens"] = 1;
    return out;
  });
}

Result<Json> AnthropicFormat::CountTokensFromChat(const Json& chat_response) {
  return GuardUpstream([&]() -> Result<Json> {
    const Json& usage = Require(chat_response, "usage", "");
    const Json& prompt = Require(usage, "prompt_tokens", "usage");
    if (!prompt.is_number_integer()) Fail("usage.prompt_tokens", "must be an integer");
    return Json{{"input_tokens", prompt}};
  });
}

Result<Json> AnthropicFormat::CountTokensEstimate(const Json& request) {
  return Guard([&]() -> Result<Json> {
    return Json{{"input_tokens", EstimateTokens(Translate(request, true).body)}};
  });
}

std::string AnthropicFormat::ErrorType(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string AnthropicFormat::StopReason(const Json& finish_reason, bool has_tool_calls) {
  std::string reason = finish_reason.is_string() ? finish_reason.get<std::string>() : "";
  if (reason == "length") return "max_tokens";
  if (reason == "tool_calls" || reason == "function_call" || has_tool_calls) return "tool_use";
  if (reason == "content_filter") return "refusal";
  return "end_turn";
}

}  // namespace forge::proxy

namespace forge::proxy {
namespace {

// /v1/messages/count_tokens served as a one-token side call to the upstream.
class AnthropicCountTokensFormat : public AnthropicFormat {
 public:
  std::string name() const override { return "anthropic-count-tokens"; }
  Result<ChatRequest> ToChat(const Json& request) override { return CountTokensToChat(request); }
  Result<Json> FromChat(const Json& chat_response) override { return CountTokensFromChat(chat_response); }
};

}  // namespace

std::unique_ptr<ClientFormat> NewAnthropicFormat() { return std::make_unique<AnthropicFormat>(); }
std::unique_ptr<ClientFormat> NewAnthropicCountTokensFormat() {
  return std::make_unique<AnthropicCountTokensFormat>();
}

}  // namespace forge::proxy
