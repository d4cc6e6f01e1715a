#include "proxy/formats/gemini.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <openssl/evp.h>

#include "base/json_field.h"
#include "proxy/formats/formats.h"
#include "proxy/formats/translated_stream.h"
#include "proxy/formats/wire.h"

namespace forge::proxy {

using namespace wire;

namespace {

// ---- thought signatures ---------------------------------------------------------

// Gemini CLI drops `thought: true` parts from the history it resends but keeps
// each part's thoughtSignature (opaque base64 bytes to a client). The proxy
// signs its answer with the reasoning text, so the next request carries the
// reasoning back and the upstream's prompt still extends its last completion.
std::string SignReasoning(const std::string& reasoning) {
  std::string plain = GeminiFormat::kReasoningMarker + reasoning;
  std::string out(4 * ((plain.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(plain.data()),
                          static_cast<int>(plain.size()));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

// The reasoning in a signature the proxy made; empty for anyone else's
// (Gemini's own, or the CLI's "skip_thought_signature_validator").
std::string SignedReasoning(const std::string& signature) {
  if (signature.empty() || signature.size() % 4 != 0) return "";
  std::string plain(3 * (signature.size() / 4), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(plain.data()),
                          reinterpret_cast<const unsigned char*>(signature.data()),
                          static_cast<int>(signature.size()));
  if (n < 0) return "";
  size_t padding = 0;
  for (size_t i = signature.size(); i > 0 && signature[i - 1] == '='; --i) ++padding;
  plain.resize(static_cast<size_t>(n) - std::min<size_t>(padding, static_cast<size_t>(n)));
  std::string_view marker = GeminiFormat::kReasoningMarker;
  if (plain.compare(0, marker.size(), marker) != 0) return "";
  return plain.substr(marker.size());
}

// ---- request: generateContent → chat -----------------------------------------

// The REST API takes proto field names in lowerCamelCase or snake_case; the
// SDK sends camelCase. Keys are brought to camelCase once, except inside the
// caller's own data (function args, responses and schemas).
Json CamelKeys(const Json& value) {
  static const std::set<std::string> kOpaque = {"args", "response", "parameters",
                                                "parametersJsonSchema", "responseSchema",
                                                "responseJsonSchema", "metadata"};
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& v : value) out.push_back(CamelKeys(v));
    return out;
  }
  if (!value.is_object()) return value;
  Json out = Json::object();
  for (auto it = value.begin(); it != value.end(); ++it) {
    std::string key;
    bool upper = false;
    for (char c : it.key()) {
      if (c == '_' && !key.empty()) {
        upper = true;
        continue;
      }
      key += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
    out[key] = kOpaque.count(key) ? it.value() : CamelKeys(it.value());
  }
  return out;
}

// Gemini's OpenAPI-subset Schema spells types in capitals (OBJECT, STRING).
Json LowerTypes(const Json& schema) {
  if (schema.is_array()) {
    Json out = Json::array();
    for (const Json& s : schema) out.push_back(LowerTypes(s));
    return out;
  }
  if (!schema.is_object()) return schema;
  Json out = Json::object();
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (it.key() == "type" && it.value().is_string()) {
      std::string t = it.value();
      std::transform(t.begin(), t.end(), t.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out["type"] = t;
    } else if (it.key() == "enum" || it.key() == "example" || it.key() == "default") {
      out[it.key()] = it.value();
    } else {
      out[it.key()] = LowerTypes(it.value());
    }
  }
  return out;
}

Json MediaPart(const Json& part, const char* key, const std::string& at) {
  const Json& media = part[key];
  std::string path = Path(at, key);
  if (!media.is_object()) Fail(path, "must be an object");
  std::string mime = RequireString(media, "mimeType", path);
  if (mime.rfind("image/", 0) != 0) Fail(Path(path, "mimeType"), "only images are supported, not \"" + mime + "\"");
  std::string url = std::string(key) == "inlineData"
                        ? "data:" + mime + ";base64," + RequireString(media, "data", path)
                        : RequireString(media, "fileUri", path);
  return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
}

// Function calls carry no ids (or client-made ones); a call gets the part's id
// when it has one, else call_gemini_<ordinal>, stable as the history is resent.
// A functionResponse answers the call with its id, else the oldest unanswered
// call of the same name, else the oldest unanswered call.
class ContentsBuilder {
 public:
  explicit ContentsBuilder(Json& messages) : messages_(messages) {}

  void Content(const Json& content, const std::string& at) {
    if (!content.is_object()) Fail(at, "must be an object");
    std::string role = OptString(content, "role", at, "user");
    const Json& parts = RequireArray(content, "parts", at);
    std::string parts_at = Path(at, "parts");
    if (role == "model") {
      Model(parts, parts_at);
    } else if (role == "user" || role == "function" || role == "tool") {
      User(parts, parts_at);
    } else {
      Fail(Path(at, "role"), "must be user or model, not \"" + role + "\"");
    }
  }

 private:
  struct Call {
    std::string id, name;
    bool answered = false;
  };

  void Model(const Json& parts, const std::string& path) {
    std::string text, reasoning, signed_reasoning;
    bool has_reasoning = false;
    Json calls = Json::array();
    for (size_t i = 0; i < parts.size(); ++i) {
      const Json& part = parts[i];
      std::string at = Path(path, i);
      if (!part.is_object()) Fail(at, "must be an object");
      if (signed_reasoning.empty()) {
        signed_reasoning = SignedReasoning(OptString(part, "thoughtSignature", at));
      }
      if (const Json* t = Find(part, "text")) {
        if (!t->is_string()) Fail(Path(at, "text"), "must be a string");
        if (OptBool(part, "thought", at, false)) {
          reasoning += t->get<std::string>();
          has_reasoning = true;
        } else {
          text += t->get<std::string>();
        }
      } else if (const Json* fc = Find(part, "functionCall")) {
        std::string fat = Path(at, "functionCall");
        if (!fc->is_object()) Fail(fat, "must be an object");
        std::string name = RequireString(*fc, "name", fat);
        Json args = Json::object();
        if (const Json* a = Find(*fc, "args")) {
          if (!a->is_object()) Fail(Path(fat, "args"), "must be an object");
          args = *a;
        }
        std::string id = OptString(*fc, "id", fat);
        if (id.empty()) id = "call_gemini_" + std::to_string(calls_.size());
        calls_.push_back({id, name});
        calls.push_back({{"id", id},
                         {"type", "function"},
                         {"function", {{"name", name}, {"arguments", args.dump()}}}});
      } else if (Find(part, "thoughtSignature") && part.size() == 1) {
        // A bare signature carries nothing the policy model produced.
      } else {
        Fail(at, "unsupported model part (expected text or functionCall)");
      }
    }
    Json message = {{"role", "assistant"}, {"content", calls.empty() || !text.empty() ? Json(text) : Json()}};
    // Thought parts the client kept win; else what the proxy's signature carried.
    if (has_reasoning) {
      message["reasoning_content"] = reasoning;
    } else if (!signed_reasoning.empty()) {
      message["reasoning_content"] = signed_reasoning;
    }
    if (!calls.empty()) message["tool_calls"] = calls;
    messages_.push_back(std::move(message));
  }

  void User(const Json& parts, const std::string& path) {
    Json content = Json::array();
    for (size_t i = 0; i < parts.size(); ++i) {
      const Json& part = parts[i];
      std::string at = Path(path, i);
      if (!part.is_object()) Fail(at, "must be an object");
      if (const Json* t = Find(part, "text")) {
        if (!t->is_string()) Fail(Path(at, "text"), "must be a string");
        if (!OptBool(part, "thought", at, false)) content.push_back({{"type", "text"}, {"text", *t}});
      } else if (Find(part, "inlineData")) {
        content.push_back(MediaPart(part, "inlineData", at));
      } else if (Find(part, "fileData")) {
        content.push_back(MediaPart(part, "fileData", at));
      } else if (const Json* fr = Find(part, "functionResponse")) {
        std::string fat = Path(at, "functionResponse");
        if (!fr->is_object()) Fail(fat, "must be an object");
        std::string name = RequireString(*fr, "name", fat);
        const Json* response = Find(*fr, "response");
        messages_.push_back({{"role", "tool"},
                             {"tool_call_id", Answer(OptString(*fr, "id", fat), name)},
                             {"content", response ? response->dump() : "{}"}});
      } else {
        Fail(at, "unsupported user part (expected text, inlineData, fileData or functionResponse)");
      }
    }
    if (content.empty()) return;
    if (content.size() == 1 && content[0]["type"] == "text") {
      messages_.push_back({{"role", "user"}, {"content", content[0]["text"]}});
    } else {
      messages_.push_back({{"role", "user"}, {"content", content}});
    }
  }

  std::string Answer(const std::string& id, const std::string& name) {
    auto take = [](Call& c) {
      c.answered = true;
      return c.id;
    };
    if (!id.empty()) {
      for (Call& c : calls_) if (c.id == id) return take(c);
      return id;
    }
    for (Call& c : calls_) if (!c.answered && c.name == name) return take(c);
    for (Call& c : calls_) if (!c.answered) return take(c);
    return "call_gemini_orphan_" + std::to_string(orphans_++);
  }

  Json& messages_;
  std::vector<Call> calls_;
  int orphans_ = 0;
};

std::string GeminiSystemText(const Json& system, const std::string& path) {
  if (system.is_string()) return system.get<std::string>();
  if (!system.is_object()) Fail(path, "must be a Content object");
  const Json& parts = RequireArray(system, "parts", path);
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string at = Path(Path(path, "parts"), i);
    if (!parts[i].is_object()) Fail(at, "must be an object");
    if (i > 0) text += "\n";
    text += RequireString(parts[i], "text", at);
  }
  return text;
}

Json GeminiTools(const Json& tools) {
  if (!tools.is_array()) Fail("tools", "must be an array");
  Json out = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string at = Path("tools", i);
    if (!tools[i].is_object()) Fail(at, "must be an object");
    // googleSearch, codeExecution, urlContext…: hosted by Google, not a policy model.
    const Json* decls = Find(tools[i], "functionDeclarations");
    if (!decls) continue;
    std::string dat = Path(at, "functionDeclarations");
    if (!decls->is_array()) Fail(dat, "must be an array");
    for (size_t j = 0; j < decls->size(); ++j) {
      const Json& d = (*decls)[j];
      std::string fat = Path(dat, j);
      if (!d.is_object()) Fail(fat, "must be an object");
      Json fn = {{"name", RequireString(d, "name", fat)}};
      if (std::string desc = OptString(d, "description", fat); !desc.empty()) fn["description"] = desc;
      if (const Json* js = Find(d, "parametersJsonSchema")) {
        fn["parameters"] = *js;
      } else if (const Json* p = Find(d, "parameters")) {
        if (!p->is_object()) Fail(Path(fat, "parameters"), "must be an object");
        fn["parameters"] = LowerTypes(*p);
      } else {
        fn["parameters"] = {{"type", "object"}, {"properties", Json::object()}};
      }
      out.push_back({{"type", "function"}, {"function", fn}});
    }
  }
  return out;
}

void ToolConfig(const Json& config, Json& body) {
  if (!config.is_object()) Fail("toolConfig", "must be an object");
  const Json* fcc = Find(config, "functionCallingConfig");
  if (!fcc) return;
  std::string at = "toolConfig.functionCallingConfig";
  std::string mode = OptString(*fcc, "mode", at, "AUTO");
  std::vector<std::string> allowed;
  if (const Json* names = Find(*fcc, "allowedFunctionNames")) {
    if (!names->is_array()) Fail(Path(at, "allowedFunctionNames"), "must be an array");
    for (const Json& n : *names) {
      if (!n.is_string()) Fail(Path(at, "allowedFunctionNames"), "must hold strings");
      allowed.push_back(n);
    }
  }
  if (mode == "AUTO" || mode == "VALIDATED" || mode == "MODE_UNSPECIFIED") {
    body["tool_choice"] = "auto";
  } else if (mode == "NONE") {
    body["tool_choice"] = "none";
  } else if (mode == "ANY") {
    body["tool_choice"] = allowed.size() == 1
                              ? Json{{"type", "function"}, {"function", {{"name", allowed[0]}}}}
                              : Json("required");
  } else {
    Fail(Path(at, "mode"), "must be AUTO, ANY, NONE or VALIDATED, not \"" + mode + "\"");
  }
}

void GenerationConfig(const Json& config, Json& body) {
  const std::string at = "generationConfig";
  if (!config.is_object()) Fail(at, "must be an object");
  CopyNumber(config, "temperature", body, "temperature", at);
  CopyNumber(config, "topP", body, "top_p", at);
  CopyNumber(config, "topK", body, "top_k", at);
  CopyNumber(config, "maxOutputTokens", body, "max_tokens", at);
  CopyNumber(config, "presencePenalty", body, "presence_penalty", at);
  CopyNumber(config, "frequencyPenalty", body, "frequency_penalty", at);
  CopyNumber(config, "seed", body, "seed", at);
  if (const Json* n = Find(config, "candidateCount"); n && *n != 1) {
    Fail(Path(at, "candidateCount"), "only 1 is supported");
  }
  if (const Json* stop = Find(config, "stopSequences")) {
    if (!stop->is_array()) Fail(Path(at, "stopSequences"), "must be an array of strings");
    for (const Json& s : *stop) {
      if (!s.is_string()) Fail(Path(at, "stopSequences"), "must be an array of strings");
    }
    if (!stop->empty()) body["stop"] = *stop;
  }
  std::string mime = OptString(config, "responseMimeType", at);
  if (mime == "application/json") {
    const Json* schema = Find(config, "responseJsonSchema");
    Json lowered;
    if (!schema) {
      if (const Json* s = Find(config, "responseSchema")) lowered = LowerTypes(*s);
      if (!lowered.is_null()) schema = &lowered;
    }
    body["response_format"] =
        schema ? Json{{"type", "json_schema"}, {"json_schema", {{"name", "response"}, {"schema", *schema}}}}
               : Json{{"type", "json_object"}};
  }
}

ChatRequest Translate(const GeminiRoute& route, const Json& raw, bool count_tokens) {
  if (!raw.is_object()) Fail("body", "must be a JSON object");
  Json request = CamelKeys(raw);
  if (count_tokens) {
    if (const Json* inner = Find(request, "generateContentRequest")) {
      if (!inner->is_object()) Fail("generateContentRequest", "must be an object");
      request = *inner;
    }
  }
  ChatRequest out;
  Json& body = out.body;
  body = Json::object();
  if (route.model.empty()) Fail("model", "required (from the URL models/{model}:…)");
  body["model"] = route.model;
  Json messages = Json::array();
  if (const Json* system = Find(request, "systemInstruction")) {
    messages.push_back({{"role", "system"}, {"content", GeminiSystemText(*system, "systemInstruction")}});
  }
  const Json& contents = RequireArray(request, "contents", "");
  ContentsBuilder builder(messages);
  for (size_t i = 0; i < contents.size(); ++i) builder.Content(contents[i], Path("contents", i));
  body["messages"] = std::move(messages);
  if (const Json* tools = Find(request, "tools")) {
    Json chat_tools = GeminiTools(*tools);
    if (!chat_tools.empty()) body["tools"] = std::move(chat_tools);
  }
  if (const Json* config = Find(request, "toolConfig")) ToolConfig(*config, body);
  if (const Json* config = Find(request, "generationConfig")) GenerationConfig(*config, body);
  out.stream = route.stream && !count_tokens;
  if (out.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  out.side_call = count_tokens || LooksLikeSideCall(body);
  return out;
}

// ---- response: chat → GenerateContentResponse ----------------------------------

Json Args(const std::string& arguments) {
  Json args = Json::parse(arguments.empty() ? "{}" : arguments, nullptr, false);
  return args.is_object() ? args : Json::object();
}

Json FunctionCallPart(const Json& call, const std::string& chat_id, size_t index) {
  const Json* fn = Find(call, "function");
  std::string id = JsonText(call, "id");
  if (id.empty()) id = DerivedId("call_", chat_id + "_" + std::to_string(index));
  return {{"functionCall",
           {{"id", id},
            {"name", fn ? JsonText(*fn, "name") : ""},
            {"args", Args(fn ? JsonText(*fn, "arguments") : "")}}}};
}

Json UsageMetadata(const Json& usage, int64_t prompt_hint) {
  int64_t prompt = prompt_hint < 0 ? 0 : prompt_hint, completion = 0;
  if (usage.is_object()) {
    prompt = JsonInt(usage, "prompt_tokens", prompt);
    completion = JsonInt(usage, "completion_tokens", 0);
  }
  return {{"promptTokenCount", prompt},
          {"candidatesTokenCount", completion},
          {"totalTokenCount", prompt + completion}};
}

Json Envelope(const std::string& chat_id, const std::string& model, Json parts) {
  return {{"candidates",
           Json::array({{{"content", {{"role", "model"}, {"parts", std::move(parts)}}}, {"index", 0}}})},
          {"modelVersion", model},
          {"responseId", DerivedId("", chat_id)}};
}

Json ResponseFromChat(const Json& chat, int64_t prompt_hint) {
  const Json& message = ChatMessage(chat);
  std::string chat_id = JsonText(chat, "id");
  Json parts = Json::array();
  if (const Json* r = ReasoningField(message); r && !r->get<std::string>().empty()) {
    parts.push_back({{"text", *r}, {"thought", true}});
  }
  if (const Json* c = Find(message, "content")) {
    if (std::string text = ContentText(*c); !text.empty()) parts.push_back({{"text", text}});
  }
  if (const Json* calls = Find(message, "tool_calls"); calls && calls->is_array()) {
    for (size_t i = 0; i < calls->size(); ++i) {
      if (!(*calls)[i].is_object()) Fail(Path("choices[0].message.tool_calls", i), "must be an object");
      parts.push_back(FunctionCallPart((*calls)[i], chat_id, i));
    }
  }
  if (const Json* r = ReasoningField(message); r && !r->get<std::string>().empty()) {
    // The first answer text and the first call each carry it (as the stream does).
    bool text_signed = false, call_signed = false;
    for (Json& part : parts) {
      bool call = part.contains("functionCall");
      if (part.value("thought", false) || (call ? call_signed : text_signed)) continue;
      part["thoughtSignature"] = SignReasoning(*r);
      (call ? call_signed : text_signed) = true;
    }
  }
  Json response = Envelope(chat_id, JsonText(chat, "model"), parts);
  response["candidates"][0]["finishReason"] =
      GeminiFormat::FinishReason(chat["choices"][0].value("finish_reason", Json()));
  response["usageMetadata"] = UsageMetadata(chat.value("usage", Json()), prompt_hint);
  return response;
}

// ---- stream: chat chunks → SSE of GenerateContentResponse deltas -----------------

// Text and thoughts go out chunk by chunk. A functionCall part must be whole
// (Gemini has no partial arguments), so each call goes out as soon as it is
// complete: when the next call starts or the choice finishes.
class GeminiStream : public TranslatedStream {
 public:
  explicit GeminiStream(bool sse) : sse_(sse) {}

  Json Assembled() const override { return ResponseFromChat(acc().Response(), acc().prompt_tokens()); }

 private:
  std::string Opening() override { return ""; }  // Gemini's first response is its first content

  std::string CloseOpen() override { return FlushCalls(pending_.size()); }

  std::string Closing() override {
    Json chat = acc().Response();
    Json last = Envelope(acc().id(), acc().model(), Json::array({{{"text", ""}}}));
    last["candidates"][0]["finishReason"] =
        GeminiFormat::FinishReason(chat["choices"][0]["finish_reason"]);
    last["usageMetadata"] = UsageMetadata(chat.value("usage", Json()), acc().prompt_tokens());
    return Frame(last) + (sse_ ? "" : "]");
  }

  std::string Malformed(const std::string& data) override {
    return sse_ ? "data: " + data + "\n\n" : NextElement() + data;
  }

  std::string Failure(const std::string& message) override {
    return Frame({{"error", {{"code", 500}, {"message", message}, {"status", "INTERNAL"}}}}) + (sse_ ? "" : "]");
  }

  std::string Emit(Json parts) { return Frame(Envelope(acc().id(), acc().model(), std::move(parts))); }

  // One response: an SSE event, or the next element of the JSON array.
  std::string Frame(const Json& response) {
    if (sse_) return SseFrame("", response);
    return NextElement() + response.dump(-1, ' ', false, Json::error_handler_t::replace);
  }

  // What goes before the next element of the JSON array: "[" first, then commas.
  std::string NextElement() {
    std::string out = array_started_ ? ",\r\n" : "[";
    array_started_ = true;
    return out;
  }

  std::string Content(const std::string& text) override {
    if (text.empty()) return "";
    Json part = {{"text", text}};
    if (!text_sent_) Sign(part);
    text_sent_ = true;
    return Emit(Json::array({std::move(part)}));
  }

  std::string Delta(const Json& delta) override {
    std::string out;
    if (const Json* r = ReasoningField(delta); r && !r->get<std::string>().empty()) {
      out += Emit(Json::array({{{"text", *r}, {"thought", true}}}));
    }
    if (const Json* c = Find(delta, "content"); c && c->is_string()) out += Content(c->get_ref<const std::string&>());
    if (const Json* calls = Find(delta, "tool_calls"); calls && calls->is_array()) {
      for (const Json& call : *calls) {
        if (!call.is_object()) continue;
        auto at = JsonIndex(call);
        if (!at || *at > kMaxStreamIndex) continue;
        size_t index = *at;
        if (index >= flushed_ && index >= pending_.size()) {
          out += FlushCalls(pending_.size());  // a new call starts: the earlier ones are whole
          pending_.resize(index + 1);
        }
      }
    }
    return out;
  }

  // Sends every call up to `end` not sent yet, with the arguments accumulated so far.
  std::string FlushCalls(size_t end) {
    Json chat = acc().Response();
    const Json* calls = Find(chat["choices"][0]["message"], "tool_calls");
    Json parts = Json::array();
    for (; flushed_ < end; ++flushed_) {
      if (calls && flushed_ < calls->size()) {
        parts.push_back(FunctionCallPart((*calls)[flushed_], acc().id(), flushed_));
        if (flushed_ == 0) Sign(parts.back());
      }
    }
    return parts.empty() ? "" : Emit(std::move(parts));
  }

  // Signs a part with the reasoning so far, as ResponseFromChat does.
  void Sign(Json& part) {
    Json chat = acc().Response();
    const Json* r = ReasoningField(chat["choices"][0]["message"]);
    if (r && !r->get<std::string>().empty()) part["thoughtSignature"] = SignReasoning(*r);
  }

  bool sse_;
  bool array_started_ = false;
  bool text_sent_ = false;
  std::vector<char> pending_;  // one slot per chat tool call index seen
  size_t flushed_ = 0;         // calls [0, flushed_) have gone out
};

}  // namespace

ClientUrl GeminiFormat::ReadUrl(std::string_view target) {
  ClientUrl url;
  url.format = FormatId::kGemini;
  // The google-genai SDK's SSE reader (Gemini CLI's) matches /^\s*data: .../
  // at the start of its buffer, so a comment before the first event makes it
  // drop every event after it; behind a first token slower than --keepalive,
  // Gemini CLI got an empty answer and sent the call again.
  url.keepalive_comments = false;
  auto route = ParseRoute(target);
  if (!route.ok()) {
    url.status = route.status();
    return url;
  }
  if (route->method == "countTokens") url.format = FormatId::kGeminiCountTokens;
  url.fields = {{"model", route->model}, {"stream", route->stream}, {"alt", route->sse ? "sse" : "json"}};
  if (route->stream && !route->sse) url.stream_content_type = "application/json";
  return url;
}

Result<GeminiRoute> GeminiFormat::ParseRoute(std::string_view target) {
  std::string_view path = target, query;
  if (size_t q = target.find('?'); q != std::string_view::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
  }
  size_t models = path.find("/models/");
  if (models == std::string_view::npos) {
    return Status::InvalidData("path: expected /v1beta/models/{model}:{method}, got \"" +
                           std::string(path) + "\"");
  }
  std::string_view rest = path.substr(models + 8);
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidData("path: expected models/{model}:{method}, got \"" + std::string(path) + "\"");
  }
  GeminiRoute route;
  route.model = rest.substr(0, colon);
  route.method = rest.substr(colon + 1);
  if (route.method != "generateContent" && route.method != "streamGenerateContent" &&
      route.method != "countTokens") {
    return Status::InvalidData("path: unsupported method \"" + route.method +
                           "\" (generateContent, streamGenerateContent, countTokens)");
  }
  route.stream = route.method == "streamGenerateContent";
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    if (kv == "alt=sse") route.sse = true;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return route;
}

Result<ChatRequest> GeminiFormat::ToChat(const Json& request) {
  return Guard([&]() -> Result<ChatRequest> {
    GeminiRoute route;
    if (request.is_object()) {
      route.model = OptString(request, "model", "");
      if (route.model.rfind("models/", 0) == 0) route.model.erase(0, 7);
      route.stream = OptBool(request, "stream", "", false);
      route.sse = route.stream && OptString(request, "alt", "", "sse") != "json";
    }
    sse_ = route.sse || !route.stream;
    return Translate(route, request, false);
  });
}

Result<ChatRequest> GeminiFormat::ToChat(const GeminiRoute& route, const Json& request) {
  sse_ = route.sse || !route.stream;
  return Guard([&]() -> Result<ChatRequest> { return Translate(route, request, false); });
}

Result<Json> GeminiFormat::FromChat(const Json& chat_response) {
  return GuardUpstream([&]() -> Result<Json> { return ResponseFromChat(chat_response, -1); });
}

std::unique_ptr<StreamTranslator> GeminiFormat::NewStream() const { return std::make_unique<GeminiStream>(sse_); }

Json GeminiFormat::ErrorBody(int http_status, const std::string& message) const {
  return {{"error", {{"code", http_status}, {"message", message}, {"status", StatusName(http_status)}}}};
}

Result<ChatRequest> GeminiFormat::CountTokensToChat(const GeminiRoute& route, const Json& request) {
  return Guard([&]() -> Result<ChatRequest> {
    ChatRequest out = Translate(route, request, true);
    out.body["max_tokens"] = 1;
    return out;
  });
}

Result<Json> GeminiFormat::CountTokensFromChat(const Json& chat_response) {
  return GuardUpstream([&]() -> Result<Json> {
    const Json& prompt = Require(Require(chat_response, "usage", ""), "prompt_tokens", "usage");
    if (!prompt.is_number_integer()) Fail("usage.prompt_tokens", "must be an integer");
    return Json{{"totalTokens", prompt}};
  });
}

Result<Json> GeminiFormat::CountTokensEstimate(const GeminiRoute& route, const Json& request) {
  return Guard([&]() -> Result<Json> {
    return Json{{"totalTokens", EstimateTokens(Translate(route, request, true).body)}};
  });
}

std::string GeminiFormat::StatusName(int status) {
  switch (status) {
    case 400: return "INVALID_ARGUMENT";
    case 401: return "UNAUTHENTICATED";
    case 403: return "PERMISSION_DENIED";
    case 404: return "NOT_FOUND";
    case 409: return "ABORTED";
    case 429: return "RESOURCE_EXHAUSTED";
    case 499: return "CANCELLED";
    case 501: return "UNIMPLEMENTED";
    case 503: return "UNAVAILABLE";
    case 504: return "DEADLINE_EXCEEDED";
    default: return status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT";
  }
}

std::string GeminiFormat::FinishReason(const Json& finish) {
  std::string reason = finish.is_string() ? finish.get<std::string>() : "";
  if (reason == "length") return "MAX_TOKENS";
  if (reason == "content_filter") return "SAFETY";
  if (reason == "abort") return "OTHER";
  return "STOP";  // stop, tool_calls (Gemini ends a function-call turn with STOP)
}

}  // namespace forge::proxy

namespace forge::proxy {
namespace {

GeminiRoute RouteFromBody(const Json& request) {
  GeminiRoute route;
  if (!request.is_object()) return route;
  if (auto it = request.find("model"); it != request.end() && it->is_string()) route.model = *it;
  if (route.model.rfind("models/", 0) == 0) route.model.erase(0, 7);
  route.method = "countTokens";
  return route;
}

// models/{m}:countTokens served as a one-token side call to the upstream.
class GeminiCountTokensFormat : public GeminiFormat {
 public:
  std::string name() const override { return "gemini-count-tokens"; }
  Result<ChatRequest> ToChat(const Json& request) override {
    return CountTokensToChat(RouteFromBody(request), request);
  }
  Result<Json> FromChat(const Json& chat_response) override { return CountTokensFromChat(chat_response); }
};

}  // namespace

std::unique_ptr<ClientFormat> NewGeminiFormat() { return std::make_unique<GeminiFormat>(); }
std::unique_ptr<ClientFormat> NewGeminiCountTokensFormat() {
  return std::make_unique<GeminiCountTokensFormat>();
}

}  // namespace forge::proxy
