#include "proxy/pass_through.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "base/json_scan.h"
#include "proxy/formats/wire.h"

namespace forge::proxy {
namespace {

using forge::ArrayElements;
using forge::FindMember;
using forge::IsJsonArray;
using forge::IsJsonNull;
using forge::IsJsonObject;
using forge::IsJsonString;
using forge::IsJsonTrue;
using forge::JsonElements;
using forge::JsonMember;
using forge::JsonMembers;
using forge::JsonStringValue;
using forge::JsonObjectWriter;
using forge::ObjectMembers;

// Digits with an optional minus: what a parser reads as an integer.
bool IsIntegerText(std::string_view v) {
  if (!v.empty() && v.front() == '-') v.remove_prefix(1);
  if (v.empty()) return false;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsPositiveInteger(std::string_view v) {
  return IsIntegerText(v) && v.front() != '-' && v.find_first_not_of('0') != std::string_view::npos;
}

// "token_id:123" → 123 (vLLM --return-tokens-as-token-ids), else -1.
int64_t TokenIdFromString(std::string_view token) {
  constexpr std::string_view kPrefix = "\"token_id:";
  if (token.size() < kPrefix.size() + 2 || token.compare(0, kPrefix.size(), kPrefix) != 0 || token.back() != '"') {
    return -1;
  }
  auto id = forge::JsonInteger(token.substr(kPrefix.size(), token.size() - kPrefix.size() - 1));
  return id && *id >= 0 ? *id : -1;
}

float LogprobValue(std::string_view v) {
  auto d = forge::JsonNumber(v);
  return d ? static_cast<float>(*d) : 0.0f;
}

}  // namespace

// Choice 0's tokens, as HarvestTokens takes them from a parsed chunk.
void HarvestChoiceTokens(const JsonMembers& choice, const forge::JsonSpans& spans, CapturedTokens& into) {
  if (const JsonMember* p = FindMember(choice, "prompt_token_ids"); p && into.prompt_ids.empty()) {
    forge::AppendJsonInt32s(p->value, into.prompt_ids);
  }
  bool have_ids = false;
  if (const JsonMember* t = FindMember(choice, "token_ids"); t && IsJsonArray(t->value)) {
    forge::AppendJsonInt32s(t->value, into.completion_ids);
    have_ids = true;
  }
  const JsonMember* lp = FindMember(choice, "logprobs");
  if (!lp || !IsJsonObject(lp->value)) return;
  auto logprobs = ObjectMembers(lp->value, &spans);
  if (const JsonMember* content = FindMember(logprobs, "content"); content && IsJsonArray(content->value)) {
    for (std::string_view entry : ArrayElements(content->value, &spans)) {
      auto fields = ObjectMembers(entry, &spans);
      if (const JsonMember* v = FindMember(fields, "logprob")) {
        if (auto logprob = forge::JsonNumber(v->value)) into.logprobs.push_back(static_cast<float>(*logprob));
      }
      if (!have_ids) {
        const JsonMember* token = FindMember(fields, "token");
        int64_t id = token ? TokenIdFromString(token->value) : -1;
        if (id >= 0) into.completion_ids.push_back(static_cast<int32_t>(id));
      }
    }
  } else if (const JsonMember* values = FindMember(logprobs, "token_logprobs"); values && IsJsonArray(values->value)) {
    for (std::string_view v : ArrayElements(values->value)) into.logprobs.push_back(LogprobValue(v));
    if (!have_ids) {
      if (const JsonMember* tokens = FindMember(logprobs, "tokens"); tokens && IsJsonArray(tokens->value)) {
        for (std::string_view t : ArrayElements(tokens->value)) {
          int64_t id = TokenIdFromString(t);
          if (id >= 0) into.completion_ids.push_back(static_cast<int32_t>(id));
        }
      }
    }
  }
}

namespace {

bool IsNonEmptyArray(std::string_view v) {
  if (!IsJsonArray(v)) return false;
  size_t next = v.find_first_not_of(" \t\r\n", 1);
  return next != std::string_view::npos && v[next] != ']';
}

// Appends the text of a message content (a string, or text parts) to probe,
// decoding no more than the side-call rule reads.
void AppendContentProbe(std::string_view content, std::string& probe) {
  auto append = [&](std::string_view json_string) {
    if (probe.size() >= wire::kSideCallProbeBytes) return;
    probe += forge::DecodeJsonStringPrefix(json_string.substr(1, json_string.size() - 2),
                                           wire::kSideCallProbeBytes - probe.size());
  };
  if (IsJsonString(content)) return append(content);
  if (!IsJsonArray(content)) return;
  for (std::string_view part : ArrayElements(content)) {
    if (!IsJsonObject(part)) continue;
    JsonMembers fields = ObjectMembers(part);
    const JsonMember* type = FindMember(fields, "type");
    const JsonMember* text = FindMember(fields, "text");
    if (type && JsonStringValue(type->value) == "text" && text && IsJsonString(text->value)) append(text->value);
  }
}

// wire::SideCallSignsOf read from the request's text: only the members the
// rule looks at are decoded. The conversation's part comes from ProbeMessage.
wire::SideCallSigns SideCallSignsOfText(const JsonMembers& members) {
  wire::SideCallSigns signs;
  if (const JsonMember* tools = FindMember(members, "tools"); tools && IsNonEmptyArray(tools->value)) {
    signs.offers_tools = true;
    return signs;
  }
  for (std::string_view key : {"max_tokens", "max_completion_tokens"}) {
    const JsonMember* m = FindMember(members, key);
    auto n = m ? forge::JsonInteger(m->value) : std::nullopt;
    if (n && *n <= 1) signs.max_tokens_at_most_one = true;
  }
  if (const JsonMember* format = FindMember(members, "response_format"); format && IsJsonObject(format->value)) {
    JsonMembers fields = ObjectMembers(format->value);
    const JsonMember* type = FindMember(fields, "type");
    signs.structured_output = !(type && IsJsonString(type->value) && JsonStringValue(type->value) == "text");
  }
  return signs;
}

// Adds a message's text to the side-call probe, in conversation order, until
// the probe has the rule's length: the walk that checks the messages' roles
// feeds it, so a long conversation is read once.
void ProbeMessage(const JsonMembers& fields, wire::SideCallSigns& signs, bool& saw_user) {
  if (signs.offers_tools || signs.probe.size() >= wire::kSideCallProbeBytes) return;
  const JsonMember* role_member = FindMember(fields, "role");
  std::string role = role_member ? JsonStringValue(role_member->value) : std::string();
  const JsonMember* content = FindMember(fields, "content");
  bool read = role == "system" || role == "developer" || (role == "user" && !saw_user);
  if (role == "user") saw_user = true;
  if (read && content) AppendContentProbe(content->value, signs.probe);
}

int64_t ChoiceIndex(const JsonMembers& choice) {
  const JsonMember* index = FindMember(choice, "index");
  if (!index) return 0;
  auto v = forge::JsonInteger(index->value);
  return v ? *v : -1;
}

}  // namespace

std::string RequestJsonError(const std::string& validator_error) {
  if (validator_error.rfind("nested deeper than", 0) == 0) {
    return "request body: objects and arrays " + validator_error + " (--max-json-depth)";
  }
  return "request body is not valid JSON: " + validator_error;
}

Result<PassThroughRequest> ReadPassThroughRequest(std::string_view body, bool completions, int max_depth) {
  forge::JsonSpans spans;
  if (auto error = forge::JsonSyntaxError(body, &spans, max_depth)) return Status::InvalidData(RequestJsonError(*error));
  std::string_view object = forge::TrimJson(body);
  if (!IsJsonObject(object)) return Status::InvalidData("request body: must be a JSON object");
  JsonMembers members = ObjectMembers(object, &spans);
  wire::SideCallSigns side_call_signs;
  if (completions) {
    const JsonMember* prompt = FindMember(members, "prompt");
    if (!prompt || !(IsJsonString(prompt->value) || IsJsonArray(prompt->value))) {
      return Status::InvalidData("prompt: must be a string, a list of strings or a list of token ids");
    }
  } else {
    const JsonMember* messages = FindMember(members, "messages");
    if (!messages || !IsJsonArray(messages->value)) return Status::InvalidData("messages: must be an array of messages");
    side_call_signs = SideCallSignsOfText(members);
    bool saw_user = false;
    size_t i = 0;
    for (std::string_view message : ArrayElements(messages->value, &spans)) {
      const JsonMember* role = nullptr;
      JsonMembers fields;
      if (IsJsonObject(message)) {
        fields = ObjectMembers(message, &spans);
        role = FindMember(fields, "role");
      }
      if (!role || !IsJsonString(role->value)) {
        return Status::InvalidData("messages[" + std::to_string(i) + "].role: missing or not a string");
      }
      ProbeMessage(fields, side_call_signs, saw_user);
      ++i;
    }
  }
  const JsonMember* stream = FindMember(members, "stream");
  if (stream && !forge::IsJsonBool(stream->value) && !IsJsonNull(stream->value)) {
    return Status::InvalidData("stream: must be a boolean");
  }

  PassThroughRequest out;
  out.stream = stream && IsJsonTrue(stream->value);
  if (!completions) out.side_call = wire::IsSideCall(side_call_signs);
  if (const JsonMember* model = FindMember(members, "model")) out.model = JsonStringValue(model->value);
  CaptureWants& wants = out.wants;
  wants.completions = completions;
  const JsonMember* token_ids = FindMember(members, "return_token_ids");
  wants.token_ids = token_ids && IsJsonTrue(token_ids->value);
  const JsonMember* logprobs = FindMember(members, "logprobs");
  // The fields the proxy sets, as JSON text (AddCaptureFields does the same on a document).
  std::vector<std::pair<std::string_view, std::string_view>> set;
  if (completions) {
    // logprobs: int (number of alternatives); 0 returns the chosen token's only.
    wants.logprobs = logprobs && IsIntegerText(logprobs->value);
    wants.top_logprobs = wants.logprobs && IsPositiveInteger(logprobs->value);
    if (!wants.logprobs) set.emplace_back("logprobs", "0");
  } else {
    wants.logprobs = logprobs && IsJsonTrue(logprobs->value);
    const JsonMember* top = FindMember(members, "top_logprobs");
    wants.top_logprobs = top && IsPositiveInteger(top->value);
    if (!wants.logprobs) {
      set.emplace_back("logprobs", "true");
      set.emplace_back("top_logprobs", "0");
    }
  }
  set.emplace_back("return_token_ids", "true");
  const JsonMember* stream_options = FindMember(members, "stream_options");
  if (out.stream && !stream_options) set.emplace_back("stream_options", R"({"include_usage":true})");
  if (out.stream && !completions) {
    const JsonMember* include = nullptr;
    if (stream_options && IsJsonObject(stream_options->value)) {
      auto options = ObjectMembers(stream_options->value);
      include = FindMember(options, "include_usage");
    }
    out.client_wants_usage = include && IsJsonTrue(include->value);
  }

  auto proxy_sets = [&](const JsonMember& m) {
    return std::any_of(set.begin(), set.end(), [&](const auto& field) { return m.KeyIs(field.first); });
  };
  if (std::none_of(members.begin(), members.end(), proxy_sets)) {
    // The client's object up to its closing brace, then the fields the proxy
    // adds. (The brace is found from the last member: text may follow the
    // object after a NUL byte, which ends the input for a parser.)
    size_t close = members.empty() ? 1 : static_cast<size_t>(members.back().value.data() +
                                                               members.back().value.size() - object.data());
    close = object.find_first_not_of(" \t\r\n", close);
    out.kept_from = static_cast<size_t>(object.data() - body.data());
    out.kept = close;
    for (const auto& [key, value] : set) {
      out.added += out.added.empty() && members.empty() ? "\"" : ",\"";
      out.added.append(key).append("\":").append(value);
    }
    out.added += '}';
  } else {
    JsonObjectWriter writer(object.size() + 96);
    for (const JsonMember& m : members) {
      if (!proxy_sets(m)) writer.Member(m);
    }
    for (const auto& [key, value] : set) writer.Raw(key, value);
    out.added = std::move(writer).Finish();
  }
  // The patch as text, keys in a document's order (sorted), so its bytes are a
  // dump of the patch; the fields' values are constants of the proxy's.
  std::sort(set.begin(), set.end());
  out.upstream_patch = R"({"set":{)";
  for (const auto& [key, value] : set) {
    if (out.upstream_patch.back() != '{') out.upstream_patch += ',';
    out.upstream_patch.append("\"").append(key).append("\":").append(value);
  }
  out.upstream_patch += R"(},"unset":[]})";
  return out;
}

Result<PassThroughChunk> CaptureAndStrip(std::string_view body, const CaptureWants& wants, bool drop_usage,
                                         CapturedTokens& tokens) {
  forge::JsonSpans spans;
  // (Nesting bounded as a request's is, at the ceiling: the translations recurse.)
  if (auto error = forge::JsonSyntaxError(body, &spans, forge::kMaxJsonDepthCeiling)) {
    return Status::InvalidData("not JSON: " + *error);
  }
  std::string_view object = forge::TrimJson(body);
  if (!IsJsonObject(object)) return Status::InvalidData("not a JSON object");
  PassThroughChunk out;
  JsonMembers members = ObjectMembers(object, &spans);
  if (const JsonMember* error = FindMember(members, "error")) {
    out.is_error = true;
    out.text = std::string(error->value);
    return out;
  }
  if (const JsonMember* p = FindMember(members, "prompt_token_ids")) forge::AppendJsonInt32s(p->value, tokens.prompt_ids);
  if (const JsonMember* p = FindMember(members, "mm_placeholders"); p && !IsJsonNull(p->value)) {
    tokens.mm_placeholders = p->value;  // offsets into the prompt ids, which go with them
  }
  if (const JsonMember* usage = FindMember(members, "usage"); usage && !IsJsonNull(usage->value)) {
    out.usage = std::string(usage->value);
  }

  const JsonMember* choices = FindMember(members, "choices");
  std::string new_choices;  // rebuilt only when a choice changes
  out.final = true;
  if (choices && IsJsonArray(choices->value)) {
    JsonElements elements = ArrayElements(choices->value, &spans);
    out.usage_only = elements.empty();
    out.final = elements.empty();
    bool changed = false;
    std::string rebuilt = "[";
    for (size_t i = 0; i < elements.size(); ++i) {
      std::string_view element = elements[i];
      if (i) rebuilt += ',';
      if (!IsJsonObject(element)) {
        rebuilt += element;
        continue;
      }
      JsonMembers choice = ObjectMembers(element, &spans);
      if (ChoiceIndex(choice) == 0) HarvestChoiceTokens(choice, spans, tokens);
      const JsonMember* finish = FindMember(choice, "finish_reason");
      if (finish && !IsJsonNull(finish->value)) out.final = true;
      if (i == 0 && finish && IsJsonString(finish->value)) out.finish_reason = JsonStringValue(finish->value);
      bool edit = false;
      for (const JsonMember& m : choice) {
        if (!wants.token_ids && (m.KeyIs("token_ids") || m.KeyIs("prompt_token_ids"))) edit = true;
        if (!wants.logprobs && m.KeyIs("logprobs") && !IsJsonNull(m.value)) edit = true;
      }
      if (!edit) {
        rebuilt += element;
        continue;
      }
      changed = true;
      JsonObjectWriter writer(element.size());
      for (const JsonMember& m : choice) {
        if (!wants.token_ids && (m.KeyIs("token_ids") || m.KeyIs("prompt_token_ids"))) continue;
        // OpenAI sends "logprobs": null when none were asked for.
        writer.Raw(m.key, !wants.logprobs && m.KeyIs("logprobs") ? std::string_view("null") : m.value);
      }
      rebuilt += std::move(writer).Finish();
    }
    rebuilt += ']';
    if (changed) new_choices = std::move(rebuilt);
  }

  bool drop_prompt_ids =
      !wants.token_ids && (FindMember(members, "prompt_token_ids") || FindMember(members, "mm_placeholders"));
  bool drop_usage_now = drop_usage && FindMember(members, "usage");
  if (new_choices.empty() && !drop_prompt_ids && !drop_usage_now) {
    out.text = std::string(object);
    return out;
  }
  JsonObjectWriter writer(object.size());
  for (const JsonMember& m : members) {
    if (!wants.token_ids && (m.KeyIs("prompt_token_ids") || m.KeyIs("mm_placeholders"))) continue;
    if (drop_usage && m.KeyIs("usage")) continue;
    if (!new_choices.empty() && m.KeyIs("choices")) {
      writer.Raw(m.key, new_choices);
      continue;
    }
    writer.Member(m);
  }
  out.text = std::move(writer).Finish();
  return out;
}

std::optional<ContentDelta> ReadContentDelta(std::string_view chunk) {
  std::string_view object = forge::TrimJson(chunk);
  if (!IsJsonObject(object)) return std::nullopt;
  ContentDelta out;
  std::string_view choices;
  for (const JsonMember& m : ObjectMembers(object)) {
    if (m.KeyIs("choices")) {
      choices = m.value;
    } else if (m.KeyIs("usage")) {
      if (!IsJsonNull(m.value)) return std::nullopt;
    } else if (m.KeyIs("object")) {
      if (!IsJsonString(m.value) || JsonStringValue(m.value) == "text_completion") return std::nullopt;
    } else {
      bool head = false;
      for (size_t k = 0; k < ContentDelta::kHeadKeys.size(); ++k) {
        if (m.KeyIs(ContentDelta::kHeadKeys[k])) {
          out.head_members |= 1u << k;
          head = true;
        }
      }
      out.only_content = out.only_content && head;
    }
  }
  if (!IsJsonArray(choices)) return std::nullopt;
  JsonElements elements = ArrayElements(choices);
  if (elements.size() != 1 || !IsJsonObject(elements[0])) return std::nullopt;
  // The last of duplicate members counts, as for the parser.
  std::string_view index = "0", delta;
  for (const JsonMember& m : ObjectMembers(elements[0])) {
    if (m.KeyIs("index")) {
      index = m.value;
    } else if (m.KeyIs("delta")) {
      delta = m.value;
    } else if (m.KeyIs("logprobs") || m.KeyIs("finish_reason") || m.KeyIs("stop_reason")) {
      if (!IsJsonNull(m.value)) return std::nullopt;
    } else if (m.KeyIs("text")) {
      return std::nullopt;
    } else {
      out.only_content = false;
    }
  }
  std::optional<int64_t> i = forge::JsonInteger(index);
  if (!i || *i < INT32_MIN || *i > INT32_MAX) return std::nullopt;
  out.index = static_cast<int>(*i);
  if (IsJsonObject(delta)) {
    for (const JsonMember& m : ObjectMembers(delta)) {
      if (m.KeyIs("content")) {
        out.content = m.value;
      } else if (m.KeyIs("role") || m.KeyIs("reasoning") || m.KeyIs("reasoning_content") || m.KeyIs("tool_calls")) {
        return std::nullopt;
      } else {
        out.only_content = false;
      }
    }
  }
  if (!out.content.empty() && !IsJsonNull(out.content) && !IsJsonString(out.content)) return std::nullopt;
  return out;
}

std::optional<std::string> ContentDeltaText(const ContentDelta& delta) {
  if (delta.index != 0 || !delta.only_content || !IsJsonString(delta.content)) return std::nullopt;
  return JsonStringValue(delta.content);
}

std::optional<std::string> ContentDeltaText(std::string_view chunk) {
  auto delta = ReadContentDelta(chunk);
  return delta ? ContentDeltaText(*delta) : std::nullopt;
}

}  // namespace forge::proxy
