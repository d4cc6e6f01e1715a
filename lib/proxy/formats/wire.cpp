#include "proxy/formats/wire.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "base/json_field.h"

namespace forge::proxy::wire {

void Fail(const std::string& path, const std::string& what) {
  throw BadField{path + ": " + what};
}

std::string Path(const std::string& parent, const char* key) {
  return parent.empty() ? std::string(key) : parent + "." + key;
}

std::string Path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

const Json* Find(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json* FirstChoice(const Json& chat) {
  const Json* choices = Find(chat, "choices");
  if (!choices || !choices->is_array()) return nullptr;
  for (const Json& choice : *choices) {
    if (JsonIndex(choice) == size_t{0}) return &choice;
  }
  return nullptr;
}

const Json& Require(const Json& object, const char* key, const std::string& path) {
  const Json* value = Find(object, key);
  if (!value) Fail(Path(path, key), "required");
  return *value;
}

std::string RequireString(const Json& object, const char* key, const std::string& path) {
  const Json& value = Require(object, key, path);
  if (!value.is_string()) Fail(Path(path, key), "must be a string");
  return value.get<std::string>();
}

const Json& RequireArray(const Json& object, const char* key, const std::string& path) {
  const Json& value = Require(object, key, path);
  if (!value.is_array()) Fail(Path(path, key), "must be an array");
  return value;
}

std::string OptString(const Json& object, const char* key, const std::string& path,
                      const std::string& fallback) {
  const Json* value = Find(object, key);
  if (!value) return fallback;
  if (!value->is_string()) Fail(Path(path, key), "must be a string");
  return value->get<std::string>();
}

bool OptBool(const Json& object, const char* key, const std::string& path, bool fallback) {
  const Json* value = Find(object, key);
  if (!value) return fallback;
  if (!value->is_boolean()) Fail(Path(path, key), "must be true or false");
  return value->get<bool>();
}

void CopyNumber(const Json& from, const char* key, Json& to, const char* to_key,
                const std::string& path) {
  const Json* value = Find(from, key);
  if (!value) return;
  if (!value->is_number()) Fail(Path(path, key), "must be a number");
  to[to_key] = *value;
}

const Json& ChatMessage(const Json& chat_response) {
  const Json& choices = RequireArray(chat_response, "choices", "");
  if (choices.empty()) Fail("choices", "empty");
  if (!choices[0].is_object()) Fail("choices[0]", "must be an object");
  const Json& message = Require(choices[0], "message", "choices[0]");
  if (!message.is_object()) Fail("choices[0].message", "must be an object");
  return message;
}

std::string SseFrame(std::string_view event, const Json& data) {
  std::string out;
  if (!event.empty()) {
    out += "event: ";
    out += event;
    out += '\n';
  }
  out += "data: ";
  out += data.dump(-1, ' ', false, Json::error_handler_t::replace);
  out += "\n\n";
  return out;
}

std::string DerivedId(std::string_view prefix, std::string_view upstream_id) {
  for (std::string_view known : {"chatcmpl-", "cmpl-", "chatcmpl_"}) {
    if (upstream_id.substr(0, known.size()) == known) {
      upstream_id.remove_prefix(known.size());
      break;
    }
  }
  std::string id(prefix);
  for (char c : upstream_id) {
    id += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  }
  if (upstream_id.empty()) id += "forge";
  return id;
}

std::string ContentText(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const Json& part : content) {
      if (part.is_object() && JsonText(part, "type") == "text" && part.contains("text") &&
          part["text"].is_string()) {
        text += part["text"].get<std::string>();
      }
    }
  }
  return text;
}

int64_t EstimateTokens(const Json& chat_body) {
  size_t bytes = 0;
  if (chat_body.contains("messages")) bytes += chat_body["messages"].dump().size();
  if (chat_body.contains("tools")) bytes += chat_body["tools"].dump().size();
  return std::max<int64_t>(1, static_cast<int64_t>((bytes + 3) / 4));
}

namespace {

// Phrases from the helper prompts of harnesses we know (Claude Code's topic
// and title calls, opencode's title generator, generic summarisers). Matched
// only in the system text or the first user text of a call with no tools,
// letters in either case.
constexpr std::array<std::string_view, 7> kSideCallMarkers = {
    "you are a title generator",
    "new conversation topic",
    "generate a concise",
    "conversation title",
    "write a 5-10 word title",
    "summarize this coding conversation",
    "isnewtopic",
};

constexpr unsigned char FoldCase(unsigned char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

// A multi-phrase search that skips (Wu-Manber, with blocks of two bytes):
// it looks at the last two bytes of a window as long as the shortest marker,
// and moves the window on by as much as no marker's first bytes could end
// closer; only where some marker's prefix ends with those two bytes are the
// markers compared. Prose moves it on by about the window each step, so a
// 4 KB probe (every call without tools has one) costs some hundreds of
// steps, without a lowered copy.
class MarkerSearch {
 public:
  constexpr MarkerSearch() : shift_() {
    for (std::string_view marker : kSideCallMarkers) window_ = std::min(window_, marker.size());
    for (auto& s : shift_) s = static_cast<unsigned char>(window_ - 1);
    for (std::string_view marker : kSideCallMarkers) {
      for (size_t j = 0; j + 2 <= window_; ++j) {
        auto& s = shift_[Slot(static_cast<unsigned char>(marker[j]), static_cast<unsigned char>(marker[j + 1]))];
        s = std::min(s, static_cast<unsigned char>(window_ - 2 - j));
      }
    }
  }

  bool Finds(std::string_view text) const {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    for (size_t end = window_ - 1; end < n;) {
      if (unsigned char s = shift_[Slot(FoldCase(p[end - 1]), FoldCase(p[end]))]) {
        end += s;
        continue;
      }
      if (MarkerAt(p + end + 1 - window_, n - (end + 1 - window_))) return true;
      ++end;
    }
    return false;
  }

 private:
  static constexpr size_t Slot(unsigned char a, unsigned char b) { return ((a << 5) ^ b) & 4095; }

  static bool MarkerAt(const unsigned char* p, size_t room) {
    return std::any_of(kSideCallMarkers.begin(), kSideCallMarkers.end(), [&](std::string_view marker) {
      if (marker.size() > room) return false;
      for (size_t k = 0; k < marker.size(); ++k) {
        if (FoldCase(p[k]) != static_cast<unsigned char>(marker[k])) return false;
      }
      return true;
    });
  }

  size_t window_ = std::string_view::npos;
  unsigned char shift_[4096];
};

constexpr MarkerSearch kMarkerSearch;

bool HasSideCallMarker(std::string_view text) { return kMarkerSearch.Finds(text); }

}  // namespace

namespace {

// Appends a message content's text (a string, or its text parts) to probe,
// no further than the rule reads: a harness's first message may be 200 KB.
void AppendProbeText(const Json* content, std::string& probe) {
  auto append = [&](const Json& text) {
    if (probe.size() < kSideCallProbeBytes) probe.append(text.get_ref<const std::string&>(), 0, kSideCallProbeBytes - probe.size());
  };
  if (!content) return;
  if (content->is_string()) return append(*content);
  if (!content->is_array()) return;
  for (const Json& part : *content) {
    const Json* type = part.is_object() ? Find(part, "type") : nullptr;
    const Json* text = part.is_object() ? Find(part, "text") : nullptr;
    if (type && type->is_string() && *type == "text" && text && text->is_string()) append(*text);
  }
}

}  // namespace

SideCallSigns SideCallSignsOf(const Json& body) {
  SideCallSigns signs;
  if (const Json* tools = Find(body, "tools"); tools && tools->is_array() && !tools->empty()) {
    signs.offers_tools = true;
    return signs;
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (const Json* m = Find(body, key); m && m->is_number_integer() && m->get<int64_t>() <= 1) {
      signs.max_tokens_at_most_one = true;
    }
  }
  if (const Json* format = Find(body, "response_format");
      format && format->is_object() && JsonText(*format, "type") != "text") {
    signs.structured_output = true;
  }
  const Json* messages = Find(body, "messages");
  if (!messages || !messages->is_array()) return signs;
  bool saw_user = false;
  for (const Json& m : *messages) {
    if (!m.is_object()) continue;
    std::string role = JsonText(m, "role");
    if (role == "system" || role == "developer") {
      AppendProbeText(Find(m, "content"), signs.probe);
    } else if (role == "user" && !saw_user) {
      AppendProbeText(Find(m, "content"), signs.probe);
      saw_user = true;
    }
  }
  return signs;
}

bool IsSideCall(const SideCallSigns& signs) {
  if (signs.offers_tools) return false;
  if (signs.max_tokens_at_most_one) return true;
  if (signs.structured_output) return true;  // a classifier call, such as Gemini CLI's model router
  return HasSideCallMarker(std::string_view(signs.probe).substr(0, kSideCallProbeBytes));
}

const Json* ReasoningField(const Json& m) {
  for (const char* key : {"reasoning_content", "reasoning"}) {
    const Json* r = Find(m, key);
    if (r && r->is_string()) return r;
  }
  return nullptr;
}

void ChatAccumulator::Add(const Json& chunk) {
  if (!chunk.is_object()) return;
  if (!started_) {
    started_ = true;
    if (const Json* id = Find(chunk, "id"); id && id->is_string()) id_ = id->get<std::string>();
    if (const Json* model = Find(chunk, "model"); model && model->is_string()) model_ = model->get<std::string>();
    if (chunk.contains("created") && chunk["created"].is_number_integer()) {
      created_ = chunk["created"].get<int64_t>();
    }
  }
  if (const Json* ids = Find(chunk, "prompt_token_ids"); ids && ids->is_array()) {
    prompt_tokens_ = static_cast<int64_t>(ids->size());
  }
  if (const Json* usage = Find(chunk, "usage"); usage && usage->is_object()) {
    usage_ = *usage;
    if (usage->contains("prompt_tokens") && (*usage)["prompt_tokens"].is_number_integer()) {
      prompt_tokens_ = (*usage)["prompt_tokens"].get<int64_t>();
    }
  }
  if (const Json* first = FirstChoice(chunk)) {
    const Json& choice = *first;
    if (const Json* ids = Find(choice, "prompt_token_ids"); ids && ids->is_array()) {
      prompt_tokens_ = static_cast<int64_t>(ids->size());
    }
    if (const Json* delta = Find(choice, "delta"); delta && delta->is_object()) {
      if (const Json* c = Find(*delta, "content"); c && c->is_string()) {
        content_ += c->get<std::string>();
        has_content_ = true;
      }
      if (const Json* r = ReasoningField(*delta)) {
        reasoning_ += r->get<std::string>();
        has_reasoning_ = true;
      }
      if (const Json* calls = Find(*delta, "tool_calls"); calls && calls->is_array()) {
        for (const Json& call : *calls) {
          if (!call.is_object()) continue;
          auto at = JsonIndex(call);
          if (!at || *at > kMaxStreamIndex) continue;
          size_t index = *at;
          while (tool_calls_.size() <= index) {
            tool_calls_.push_back({{"id", ""}, {"type", "function"},
                                   {"function", {{"name", ""}, {"arguments", ""}}}});
          }
          Json& slot = tool_calls_[index];
          if (const Json* id = Find(call, "id"); id && id->is_string()) slot["id"] = *id;
          if (const Json* fn = Find(call, "function"); fn && fn->is_object()) {
            if (const Json* n = Find(*fn, "name"); n && n->is_string()) {
              slot["function"]["name"] = slot["function"]["name"].get<std::string>() +
                                         n->get<std::string>();
            }
            if (const Json* a = Find(*fn, "arguments"); a && a->is_string()) {
              slot["function"]["arguments"] =
                  slot["function"]["arguments"].get<std::string>() + a->get<std::string>();
            }
          }
        }
      }
    }
    if (const Json* f = Find(choice, "finish_reason")) finish_reason_ = *f;
    if (const Json* s = Find(choice, "stop_reason")) stop_reason_ = *s;
  }
}

Json ChatAccumulator::Response() const {
  Json message = {{"role", "assistant"}, {"content", has_content_ ? Json(content_) : Json()}};
  if (has_reasoning_) message["reasoning_content"] = reasoning_;
  if (!tool_calls_.empty()) message["tool_calls"] = tool_calls_;
  Json choice = {{"index", 0}, {"message", message}, {"finish_reason", finish_reason_}};
  if (!stop_reason_.is_null()) choice["stop_reason"] = stop_reason_;
  Json response = {{"id", id_},           {"object", "chat.completion"},
                   {"created", created_}, {"model", model_},
                   {"choices", Json::array({choice})}};
  if (!usage_.is_null()) response["usage"] = usage_;
  return response;
}

}  // namespace forge::proxy::wire
