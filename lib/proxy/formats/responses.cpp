#include "proxy/formats/responses.h"

#include <random>

#include "base/json_dump.h"
#include "base/json_field.h"
#include "proxy/formats/formats.h"
#include "proxy/formats/translated_stream.h"
#include "proxy/formats/wire.h"

namespace forge::proxy {

using namespace wire;

namespace {

// ---- request: Responses → chat ------------------------------------------------

// Codex offers tools in groups, {"type": "namespace", "name": NS, "tools": [...]}
// (an MCP server's tools under "mcp__SERVER"), and runs such a tool only when
// its call names the namespace. A chat policy sees each as one function named
// NS__NAME (Codex's own spelling of an MCP tool); its calls are split back.
std::string NamespacedName(const std::string& ns, const std::string& name) { return ns + "__" + name; }

Json InputParts(const Json& content, const std::string& path) {
  if (content.is_string()) return content;
  if (!content.is_array()) Fail(path, "must be a string or an array of content parts");
  Json parts = Json::array();
  ForEachTyped(content, path, "content part", [&](const Json& part, const std::string& at, const std::string& type) {
    if (type == "input_text" || type == "output_text" || type == "text") {
      parts.push_back({{"type", "text"}, {"text", RequireString(part, "text", at)}});
    } else if (type == "input_image") {
      Json image = {{"url", RequireString(part, "image_url", at)}};
      if (std::string detail = OptString(part, "detail", at); !detail.empty()) {
        image["detail"] = detail;
      }
      parts.push_back({{"type", "image_url"}, {"image_url", image}});
    } else {
      Fail(Path(at, "type"), "unsupported content part \"" + type + "\"");
    }
  });
  if (parts.size() == 1 && parts[0]["type"] == "text") return parts[0]["text"];
  return parts;
}

std::string AssistantText(const Json& content, const std::string& path) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) Fail(path, "must be a string or an array of content parts");
  std::string text;
  ForEachTyped(content, path, "content part", [&](const Json& part, const std::string& at, const std::string& type) {
    if (type == "output_text" || type == "input_text" || type == "text") {
      text += RequireString(part, "text", at);
    } else if (type == "refusal") {
      text += RequireString(part, "refusal", at);
    } else {
      Fail(Path(at, "type"), "unsupported assistant content part \"" + type + "\"");
    }
  });
  return text;
}

// The reasoning text of a reasoning item: its content, else what we put in
// encrypted_content, else its summary.
std::string ReasoningText(const Json& item, const std::string& path) {
  std::string text;
  if (const Json* content = Find(item, "content"); content && content->is_array()) {
    for (const Json& part : *content) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        text += part["text"].get<std::string>();
      }
    }
  }
  if (!text.empty()) return text;
  std::string sealed = OptString(item, "encrypted_content", path);
  std::string_view marker = ResponsesFormat::kReasoningMarker;
  if (sealed.compare(0, marker.size(), marker) == 0) return sealed.substr(marker.size());
  if (const Json* summary = Find(item, "summary"); summary && summary->is_array()) {
    for (const Json& part : *summary) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        if (!text.empty()) text += "\n\n";
        text += part["text"].get<std::string>();
      }
    }
  }
  return text;
}

class InputBuilder {
 public:
  explicit InputBuilder(Json& messages) : messages_(messages) {}

  void Item(const Json& item, const std::string& at) {
    if (!item.is_object()) Fail(at, "must be an object");
    std::string type = OptString(item, "type", at, Find(item, "role") ? "message" : "");
    if (type == "message") {
      Message(item, at);
    } else if (type == "function_call") {
      std::string name = RequireString(item, "name", at);
      if (std::string ns = OptString(item, "namespace", at); !ns.empty()) name = NamespacedName(ns, name);
      Json call = {{"id", RequireString(item, "call_id", at)},
                   {"type", "function"},
                   {"function",
                    {{"name", name},
                     {"arguments", RequireString(item, "arguments", at)}}}};
      Json& assistant = OpenAssistant();
      if (!assistant.contains("tool_calls")) assistant["tool_calls"] = Json::array();
      assistant["tool_calls"].push_back(std::move(call));
    } else if (type == "function_call_output") {
      const Json& output = Require(item, "output", at);
      messages_.push_back({{"role", "tool"},
                           {"tool_call_id", RequireString(item, "call_id", at)},
                           {"content", InputParts(output, Path(at, "output"))}});
    } else if (type == "reasoning") {
      reasoning_ += ReasoningText(item, at);
    } else if (type.empty()) {
      Fail(Path(at, "type"), "required");
    } else {
      Fail(Path(at, "type"), "unsupported input item \"" + type + "\"");
    }
  }

 private:
  void Message(const Json& item, const std::string& at) {
    std::string role = RequireString(item, "role", at);
    const Json& content = Require(item, "content", at);
    std::string content_at = Path(at, "content");
    if (role == "assistant") {
      Json& assistant = OpenAssistant();
      std::string text = AssistantText(content, content_at);
      assistant["content"] = assistant["content"].is_string()
                                 ? assistant["content"].get<std::string>() + text
                                 : text;
      return;
    }
    if (role != "user" && role != "system" && role != "developer") {
      Fail(Path(at, "role"), "must be user, system, developer or assistant, not \"" + role + "\"");
    }
    // Chat templates know "system"; "developer" is the Responses name for it.
    messages_.push_back({{"role", role == "user" ? "user" : "system"},
                         {"content", InputParts(content, content_at)}});
  }

  // One turn's reasoning, text and calls arrive as separate items; they fold
  // into one assistant message until a tool result or user turn intervenes.
  Json& OpenAssistant() {
    if (messages_.empty() || messages_.back()["role"] != "assistant") {
      messages_.push_back({{"role", "assistant"}, {"content", nullptr}});
    }
    Json& assistant = messages_.back();
    if (!reasoning_.empty()) {
      assistant["reasoning_content"] = JsonText(assistant, "reasoning_content") + reasoning_;
      reasoning_.clear();
    }
    return assistant;
  }

  Json& messages_;
  std::string reasoning_;
};

Json FunctionTool(const Json& tool, const std::string& name, const std::string& at) {
  Json fn = {{"name", name}};
  if (std::string d = OptString(tool, "description", at); !d.empty()) fn["description"] = d;
  const Json* parameters = Find(tool, "parameters");
  if (parameters && !parameters->is_object()) Fail(Path(at, "parameters"), "must be an object");
  fn["parameters"] = parameters ? *parameters : Json{{"type", "object"}, {"properties", Json::object()}};
  if (const Json* strict = Find(tool, "strict")) {
    if (!strict->is_boolean()) Fail(Path(at, "strict"), "must be true or false");
    fn["strict"] = *strict;
  }
  return {{"type", "function"}, {"function", fn}};
}

// The function tools of a namespace group, each under its NS__NAME.
void NamespaceTools(const Json& group, const std::string& at, Json& out, ToolNamespaces* names) {
  std::string ns = RequireString(group, "name", at);
  const Json& tools = Require(group, "tools", at);
  if (!tools.is_array()) Fail(Path(at, "tools"), "must be an array");
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string inner_at = Path(Path(at, "tools"), i);
    if (!tools[i].is_object()) Fail(inner_at, "must be an object");
    if (OptString(tools[i], "type", inner_at, "function") != "function") continue;
    std::string name = RequireString(tools[i], "name", inner_at);
    std::string flat = NamespacedName(ns, name);
    out.push_back(FunctionTool(tools[i], flat, inner_at));
    if (names) (*names)[flat] = {ns, name};
  }
}

Json ResponsesTools(const Json& tools, ToolNamespaces* names = nullptr) {
  if (!tools.is_array()) Fail("tools", "must be an array");
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    std::string at = Path("tools", i);
    if (!tool.is_object()) Fail(at, "must be an object");
    std::string type = RequireString(tool, "type", at);
    if (type == "namespace") {
      NamespaceTools(tool, at, out, names);
    } else if (type == "function") {
      out.push_back(FunctionTool(tool, RequireString(tool, "name", at), at));
    }
    // Hosted tools (web_search, custom, local_shell…) have no chat
    // equivalent a policy model could call; they are left out.
  }
  return out;
}

Json ToolChoice(const Json& choice) {
  if (choice.is_string()) {
    std::string mode = choice.get<std::string>();
    if (mode != "auto" && mode != "none" && mode != "required") {
      Fail("tool_choice", "must be auto, none or required, not \"" + mode + "\"");
    }
    return mode;
  }
  if (!choice.is_object()) Fail("tool_choice", "must be a string or an object");
  std::string type = RequireString(choice, "type", "tool_choice");
  if (type == "function") {
    return {{"type", "function"}, {"function", {{"name", RequireString(choice, "name", "tool_choice")}}}};
  }
  if (type == "allowed_tools") return OptString(choice, "mode", "tool_choice", "auto");
  Fail("tool_choice.type", "unsupported tool choice \"" + type + "\"");
}

Json ResponseFormat(const Json& text) {
  if (!text.is_object()) Fail("text", "must be an object");
  const Json* format = Find(text, "format");
  if (!format) return nullptr;
  std::string type = RequireString(*format, "type", "text.format");
  if (type == "text") return nullptr;
  if (type == "json_object") return {{"type", "json_object"}};
  if (type == "json_schema") {
    Json schema = {{"name", RequireString(*format, "name", "text.format")},
                   {"schema", Require(*format, "schema", "text.format")}};
    if (const Json* strict = Find(*format, "strict")) schema["strict"] = *strict;
    return {{"type", "json_schema"}, {"json_schema", schema}};
  }
  Fail("text.format.type", "unsupported format \"" + type + "\"");
}

ChatRequest Translate(const Json& request, const ResponseStateStore& state) {
  if (!request.is_object()) Fail("body", "must be a JSON object");
  ChatRequest out;
  Json& body = out.body;
  body = Json::object();
  body["model"] = RequireString(request, "model", "");

  // The conversation so far (without instructions, which previous_response_id
  // does not carry over), then this request's input items.
  Json conversation = Json::array();
  if (std::string previous = OptString(request, "previous_response_id", ""); !previous.empty()) {
    std::optional<Json> kept = state.Get(previous);
    if (!kept) {
      Fail("previous_response_id",
           "no response \"" + previous + "\" is kept (unknown, evicted, or stored with store:false)");
    }
    conversation = std::move(*kept);
  }
  const Json& input = Require(request, "input", "");
  if (input.is_string()) {
    conversation.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array()) {
    InputBuilder builder(conversation);
    for (size_t i = 0; i < input.size(); ++i) builder.Item(input[i], Path("input", i));
  } else {
    Fail("input", "must be a string or an array of items");
  }

  Json messages = Json::array();
  if (std::string instructions = OptString(request, "instructions", ""); !instructions.empty()) {
    messages.push_back({{"role", "system"}, {"content", instructions}});
  }
  for (const Json& m : conversation) messages.push_back(m);
  body["messages"] = std::move(messages);

  if (const Json* tools = Find(request, "tools")) {
    Json chat_tools = ResponsesTools(*tools);
    if (!chat_tools.empty()) body["tools"] = std::move(chat_tools);
  }
  if (const Json* choice = Find(request, "tool_choice")) body["tool_choice"] = ToolChoice(*choice);
  if (const Json* parallel = Find(request, "parallel_tool_calls")) {
    if (!parallel->is_boolean()) Fail("parallel_tool_calls", "must be true or false");
    if (body.contains("tools")) body["parallel_tool_calls"] = *parallel;
  }
  if (const Json* max = Find(request, "max_output_tokens")) {
    if (!max->is_number_integer() || max->get<int64_t>() < 1) {
      Fail("max_output_tokens", "must be a positive integer");
    }
    body["max_tokens"] = *max;
  }
  CopyNumber(request, "temperature", body, "temperature", "");
  CopyNumber(request, "top_p", body, "top_p", "");
  if (const Json* reasoning = Find(request, "reasoning")) {
    if (!reasoning->is_object()) Fail("reasoning", "must be an object");
    if (std::string effort = OptString(*reasoning, "effort", "reasoning"); !effort.empty()) {
      body["reasoning_effort"] = effort;
    }
  }
  if (const Json* text = Find(request, "text")) {
    if (Json format = ResponseFormat(*text); !format.is_null()) body["response_format"] = format;
  }
  if (std::string user = OptString(request, "user", ""); !user.empty()) body["user"] = user;

  out.stream = OptBool(request, "stream", "", false);
  if (out.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  out.side_call = LooksLikeSideCall(body);
  out.state = {{"store", OptBool(request, "store", "", true)}, {"conversation", conversation}};
  return out;
}

// ---- response: chat → Responses -----------------------------------------------

std::string CallId(const Json& call, const std::string& chat_id, size_t index) {
  std::string id = call.is_object() ? JsonText(call, "id") : "";
  return id.empty() ? DerivedId("call_", chat_id + "_" + std::to_string(index)) : id;
}

std::string ItemId(std::string_view prefix, const std::string& chat_id, int ordinal) {
  std::string id = DerivedId(prefix, chat_id);
  return ordinal == 0 ? id : id + "_" + std::to_string(ordinal);
}

Json OutputTextPart(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}};
}

Json MessageItem(const std::string& id, const std::string& text, const char* status) {
  Json content = Json::array();
  if (status == std::string("completed")) content.push_back(OutputTextPart(text));
  return {{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"},
          {"content", content}};
}

Json ReasoningItem(const std::string& id, const std::string& text, bool done) {
  Json item = {{"id", id}, {"type", "reasoning"}, {"summary", Json::array()}};
  if (done) {
    item["content"] = Json::array({{{"type", "reasoning_text"}, {"text", text}}});
    item["encrypted_content"] = ResponsesFormat::kReasoningMarker + text;
  }
  return item;
}

// name: the chat tool's; a namespaced tool's call names its namespace again.
Json FunctionCallItem(const std::string& call_id, const std::string& name, const std::string& arguments,
                      const char* status, const ToolNamespaces* names) {
  Json item = {{"id", DerivedId("fc_", call_id)}, {"type", "function_call"}, {"status", status},
               {"call_id", call_id},              {"name", name},            {"arguments", arguments}};
  if (names) {
    if (auto found = names->find(name); found != names->end()) {
      item["namespace"] = found->second.first;
      item["name"] = found->second.second;
    } else if (size_t split = name.find("__", 5); name.rfind("mcp__", 0) == 0 && split != std::string::npos &&
                                                   split + 2 < name.size()) {
      // An MCP tool this request did not list: Codex lists a server's tools
      // only once the server is up, which can be after the first request of a
      // turn, and runs mcp__SERVER's tools by namespace whenever it has them.
      item["namespace"] = name.substr(0, split);
      item["name"] = name.substr(split + 2);
    }
  }
  return item;
}

Json ResponsesUsage(const Json& chat_usage, int64_t prompt_hint) {
  if (!chat_usage.is_object() && prompt_hint < 0) return nullptr;
  int64_t input = prompt_hint < 0 ? 0 : prompt_hint, output = 0, cached = 0, reasoning = 0;
  if (chat_usage.is_object()) {
    input = JsonInt(chat_usage, "prompt_tokens", input);
    output = JsonInt(chat_usage, "completion_tokens", 0);
    if (const Json* d = Find(chat_usage, "prompt_tokens_details")) {
      cached = JsonInt(*d, "cached_tokens", 0);
    }
    if (const Json* d = Find(chat_usage, "completion_tokens_details")) {
      reasoning = JsonInt(*d, "reasoning_tokens", 0);
    }
  }
  return {{"input_tokens", input},
          {"input_tokens_details", {{"cached_tokens", cached}}},
          {"output_tokens", output},
          {"output_tokens_details", {{"reasoning_tokens", reasoning}}},
          {"total_tokens", input + output}};
}

Json ResponseObject(const std::string& id, int64_t created, const std::string& model,
                    const std::string& status, Json output, Json usage) {
  Json response = {{"id", id},
                   {"object", "response"},
                   {"created_at", created},
                   {"status", status},
                   {"error", nullptr},
                   {"incomplete_details", nullptr},
                   {"model", model},
                   {"output", std::move(output)},
                   {"usage", std::move(usage)}};
  if (status == "incomplete") response["incomplete_details"] = {{"reason", "max_output_tokens"}};
  return response;
}

std::string ResponseStatus(const Json& finish_reason) {
  return finish_reason == "length" ? "incomplete" : "completed";
}

Json ResponseFromChat(const Json& chat, int64_t prompt_hint, const std::string& response_id,
                      const ToolNamespaces* names) {
  const Json& message = ChatMessage(chat);
  std::string chat_id = JsonText(chat, "id");
  Json output = Json::array();
  if (const Json* r = ReasoningField(message); r && !r->get<std::string>().empty()) {
    output.push_back(ReasoningItem(ItemId("rs_", chat_id, 0), *r, true));
  }
  if (const Json* c = Find(message, "content")) {
    if (std::string text = ContentText(*c); !text.empty()) {
      output.push_back(MessageItem(ItemId("msg_", chat_id, 0), text, "completed"));
    }
  }
  if (const Json* calls = Find(message, "tool_calls"); calls && calls->is_array()) {
    for (size_t i = 0; i < calls->size(); ++i) {
      const Json& call = (*calls)[i];
      std::string at = Path("choices[0].message.tool_calls", i);
      if (!call.is_object()) Fail(at, "must be an object");
      const Json& fn = Require(call, "function", at);
      output.push_back(FunctionCallItem(CallId(call, chat_id, i),
                                        RequireString(fn, "name", Path(at, "function")),
                                        OptString(fn, "arguments", Path(at, "function")),
                                        "completed", names));
    }
  }
  return ResponseObject(response_id, JsonInt(chat, "created", 0),
                        JsonText(chat, "model"),
                        ResponseStatus(chat["choices"][0].value("finish_reason", Json())), output,
                        ResponsesUsage(chat.value("usage", Json()), prompt_hint));
}

// ---- stream: chat chunks → Responses events -------------------------------------

class ResponsesStream : public FragmentedToolStream {
 public:
  ResponsesStream(std::string response_id, ToolNamespaces names)
      : id_(std::move(response_id)), names_(std::move(names)) {}

  Json Assembled() const override {
    return ResponseFromChat(acc().Response(), acc().prompt_tokens(), ResponseIdNow(), &names_);
  }

 private:
  enum class Item { kNone, kText, kReasoning, kTool };

  std::string ResponseIdNow() const {
    return id_.empty() ? ResponsesFormat::ResponseId(Json{{"id", acc().id()}}) : id_;
  }

  std::string Event(const std::string& type, Json fields) {
    Json data = {{"type", type}, {"sequence_number", sequence_++}};
    data.update(fields);
    return SseFrame(type, data);
  }

  // A token's delta event written without building the document: the bytes
  // Event makes of {item_id, output_index, delta[, content_index, logprobs: []]}
  // (nlohmann sorts the keys).
  std::string DeltaEvent(std::string_view type, const std::string& item_id, int output_index,
                         const std::string& delta, bool text_part, bool logprobs) {
    std::string out = "event: ";
    out += type;
    out += "\ndata: {";
    if (text_part) out += "\"content_index\":0,";
    out += "\"delta\":";
    AppendJsonString(out, delta);
    out += ",\"item_id\":";
    AppendJsonString(out, item_id);
    if (logprobs) out += ",\"logprobs\":[]";
    out += ",\"output_index\":";
    out += std::to_string(output_index);
    out += ",\"sequence_number\":";
    out += std::to_string(sequence_++);
    out += ",\"type\":\"";
    out += type;
    out += "\"}\n\n";
    return out;
  }

  std::string Opening() override {
    Json response = ResponseObject(ResponseIdNow(), acc().created(), acc().model(), "in_progress",
                                   Json::array(), nullptr);
    std::string out = Event("response.created", {{"response", response}});
    out += Event("response.in_progress", {{"response", response}});
    return out;
  }

  std::string Open(Item kind, Json item) {
    std::string out = CloseOpen();
    open_ = kind;
    open_index_ = static_cast<int>(output_.size());
    open_id_ = item["id"];
    text_.clear();
    output_.push_back(item);
    out += Event("response.output_item.added", {{"output_index", open_index_}, {"item", item}});
    if (kind == Item::kText) {
      out += Event("response.content_part.added", {{"item_id", open_id_},
                                                   {"output_index", open_index_},
                                                   {"content_index", 0},
                                                   {"part", OutputTextPart("")}});
    }
    return out;
  }

  std::string Closing() override {
    Json response = Assembled();
    std::string status = response["status"];
    return Event(status == "incomplete" ? "response.incomplete" : "response.completed",
                 {{"response", response}});
  }

  std::string Failure(const std::string& message) override {
    std::string out = Begin();
    Json response = ResponseObject(ResponseIdNow(), acc().created(), acc().model(), "failed", output_, nullptr);
    response["error"] = {{"code", "server_error"}, {"message", message}};
    return out + Event("response.failed", {{"response", response}});
  }

  std::string Malformed(const std::string& data) override {
    return "event: response.output_text.delta\ndata: " + data + "\n\n";
  }

  std::string CloseOpen() override {
    std::string out;
    Json item;
    switch (open_) {
      case Item::kNone: return "";
      case Item::kText:
        out += Event("response.output_text.done", {{"item_id", open_id_},
                                                   {"output_index", open_index_},
                                                   {"content_index", 0},
                                                   {"text", text_},
                                                   {"logprobs", Json::array()}});
        out += Event("response.content_part.done", {{"item_id", open_id_},
                                                    {"output_index", open_index_},
                                                    {"content_index", 0},
                                                    {"part", OutputTextPart(text_)}});
        item = MessageItem(open_id_, text_, "completed");
        break;
      case Item::kReasoning:
        out += Event("response.reasoning_text.done", {{"item_id", open_id_},
                                                      {"output_index", open_index_},
                                                      {"content_index", 0},
                                                      {"text", text_}});
        item = ReasoningItem(open_id_, text_, true);
        break;
      case Item::kTool: {
        const Json& added = output_[open_index_];
        out += Event("response.function_call_arguments.done", {{"item_id", open_id_},
                                                               {"output_index", open_index_},
                                                               {"name", added["name"]},
                                                               {"arguments", text_}});
        item = added;  // its name (and namespace) as announced
        item["arguments"] = text_;
        item["status"] = "completed";
        break;
      }
    }
    output_[open_index_] = item;
    out += Event("response.output_item.done", {{"output_index", open_index_}, {"item", item}});
    open_ = Item::kNone;
    return out;
  }

  std::string Content(const std::string& text) override {
    if (text.empty()) return "";
    std::string out;
    if (open_ != Item::kText) {
      out += Open(Item::kText, MessageItem(ItemId("msg_", acc().id(), text_items_++), "", "in_progress"));
    }
    text_ += text;
    out += DeltaEvent("response.output_text.delta", open_id_, open_index_, text, true, true);
    return out;
  }

  std::string Reasoning(const std::string& text) override {
    std::string out;
    if (open_ != Item::kReasoning) {
      out += Open(Item::kReasoning, ReasoningItem(ItemId("rs_", acc().id(), reasoning_items_++), "", false));
    }
    text_ += text;
    out += DeltaEvent("response.reasoning_text.delta", open_id_, open_index_, text, true, false);
    return out;
  }

  std::string OpenTool(const Json& call, size_t index, const std::string& name, int& at) override {
    std::string out =
        Open(Item::kTool, FunctionCallItem(CallId(call, acc().id(), index), name, "", "in_progress", &names_));
    at = open_index_;
    return out;
  }

  std::string ToolArguments(int at, const std::string& fragment) override {
    if (open_ == Item::kTool && at == open_index_) text_ += fragment;
    return DeltaEvent("response.function_call_arguments.delta", output_[at]["id"].get_ref<const std::string&>(), at,
                      fragment, false, false);
  }

  std::string id_;
  ToolNamespaces names_;
  int64_t sequence_ = 0;
  Json output_ = Json::array();  // items as last announced, for response.failed
  Item open_ = Item::kNone;
  int open_index_ = -1;
  std::string open_id_, text_;
  int text_items_ = 0, reasoning_items_ = 0;
};

Json AssistantMessage(const Json& chat_message) {
  Json message = {{"role", "assistant"}, {"content", chat_message.value("content", Json())}};
  if (const Json* r = ReasoningField(chat_message)) message["reasoning_content"] = *r;
  if (const Json* calls = Find(chat_message, "tool_calls"); calls && !calls->empty()) {
    message["tool_calls"] = *calls;
  }
  return message;
}

}  // namespace

ResponsesFormat::ResponsesFormat(std::shared_ptr<ResponseStateStore> state)
    : state_(state ? std::move(state) : std::make_shared<MemoryResponseStateStore>()) {}

Result<ChatRequest> ResponsesFormat::ToChat(const Json& request) {
  return Guard([&]() -> Result<ChatRequest> {
    ChatRequest out = Translate(request, *state_);
    namespaces_.clear();
    if (const Json* tools = Find(request, "tools")) ResponsesTools(*tools, &namespaces_);
    static thread_local std::mt19937_64 random{std::random_device{}()};
    char hex[33];
    snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(random()),
             static_cast<unsigned long long>(random()));
    response_id_ = std::string("resp_") + hex;
    out.state["response_id"] = response_id_;
    return out;
  });
}

std::string ResponsesFormat::IdFor(const Json& chat_response) const {
  return response_id_.empty() ? ResponseId(chat_response) : response_id_;
}

Result<Json> ResponsesFormat::FromChat(const Json& chat_response) {
  return GuardUpstream([&]() -> Result<Json> {
    return ResponseFromChat(chat_response, -1, IdFor(chat_response), &namespaces_);
  });
}

std::unique_ptr<StreamTranslator> ResponsesFormat::NewStream() const {
  return std::make_unique<ResponsesStream>(response_id_, namespaces_);
}

void ResponsesFormat::Finished(const ChatRequest& request, const Json& chat_response) {
  if (!request.state.is_object() || !JsonTrue(request.state, "store")) return;
  const Json* conversation = Find(request.state, "conversation");
  if (!conversation || !conversation->is_array()) return;
  Json messages = *conversation;
  try {
    messages.push_back(AssistantMessage(ChatMessage(chat_response)));
  } catch (const BadField&) {
    return;  // nothing usable to continue from
  }
  std::string id = JsonText(request.state, "response_id");
  state_->Put(id.empty() ? ResponseId(chat_response) : id, std::move(messages));
}

Json ResponsesFormat::ErrorBody(int http_status, const std::string& message) const {
  std::string type = http_status == 401   ? "authentication_error"
                     : http_status == 403 ? "permission_error"
                     : http_status == 404 ? "not_found_error"
                     : http_status == 429 ? "rate_limit_error"
                     : http_status >= 500 ? "server_error"
                                          : "invalid_request_error";
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

std::string ResponsesFormat::ResponseId(const Json& chat) {
  return DerivedId("resp_", chat.is_object() ? JsonText(chat, "id") : "");
}

}  // namespace forge::proxy

namespace forge::proxy {

std::unique_ptr<ClientFormat> NewResponsesFormat() {
  static const auto state = std::make_shared<MemoryResponseStateStore>();
  return std::make_unique<ResponsesFormat>(state);
}

}  // namespace forge::proxy
