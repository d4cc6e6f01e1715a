#include "proxy/formats/wire.h"

#include <emmintrin.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>

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
    if (choice.is_object() && choice.value("index", 0) == 0) return &choice;
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
      if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
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

// ASCII only (the markers are ASCII): std::tolower consults the locale per
// byte. Sixteen bytes at a time: every call without tools has its probe (up
// to 4 KB) lowered.
std::string Lower(std::string_view s) {
  std::string out(s);
  char* p = out.data();
  size_t i = 0;
  // c + (128 - 'A') wraps 'A'..'Z', and only them, onto the 26 smallest signed bytes.
  const __m128i shift = _mm_set1_epi8(static_cast<char>(128 - 'A'));
  const __m128i past_z = _mm_set1_epi8(static_cast<char>(-128 + 26));
  const __m128i case_bit = _mm_set1_epi8(0x20);
  for (; i + 16 <= out.size(); i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i upper = _mm_cmplt_epi8(_mm_add_epi8(v, shift), past_z);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i), _mm_or_si128(v, _mm_and_si128(upper, case_bit)));
  }
  for (; i < out.size(); ++i) {
    if (p[i] >= 'A' && p[i] <= 'Z') p[i] = static_cast<char>(p[i] - 'A' + 'a');
  }
  return out;
}

// Phrases from the helper prompts of harnesses we know (Claude Code's topic
// and title calls, opencode's title generator, generic summarisers). Matched
// only in the system text or the first user text of a call with no tools.
constexpr std::array<std::string_view, 7> kSideCallMarkers = {
    "you are a title generator",
    "new conversation topic",
    "generate a concise",
    "conversation title",
    "write a 5-10 word title",
    "summarize this coding conversation",
    "isnewtopic",
};

// Whether lowered text holds a marker. One pass, sixteen positions at a
// time: a position is compared in full only where some marker's first three
// bytes are (rare in prose). Seven memmem passes read a 4 KB probe at a
// third of the speed, and every call without tools is probed.
bool HasSideCallMarker(std::string_view text) {
  const char* p = text.data();
  const size_t n = text.size();
  auto marker_at = [&](size_t at) {
    return std::any_of(kSideCallMarkers.begin(), kSideCallMarkers.end(), [&](std::string_view marker) {
      return n - at >= marker.size() && std::memcmp(p + at, marker.data(), marker.size()) == 0;
    });
  };
  constexpr size_t kMarkers = kSideCallMarkers.size();
  __m128i heads[3][kMarkers];
  for (size_t k = 0; k < kMarkers; ++k) {
    for (size_t b = 0; b < 3; ++b) heads[b][k] = _mm_set1_epi8(kSideCallMarkers[k][b]);
  }
  size_t i = 0;
  for (; i + 16 + 2 <= n; i += 16) {
    __m128i at[3];
    for (size_t b = 0; b < 3; ++b) at[b] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + b));
    __m128i candidates = _mm_setzero_si128();
    for (size_t k = 0; k < kMarkers; ++k) {
      candidates = _mm_or_si128(candidates, _mm_and_si128(_mm_and_si128(_mm_cmpeq_epi8(at[0], heads[0][k]),
                                                                        _mm_cmpeq_epi8(at[1], heads[1][k])),
                                                          _mm_cmpeq_epi8(at[2], heads[2][k])));
    }
    for (unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(candidates)); mask; mask &= mask - 1) {
      if (marker_at(i + static_cast<size_t>(__builtin_ctz(mask)))) return true;
    }
  }
  for (; i < n; ++i) {
    if (marker_at(i)) return true;
  }
  return false;
}

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
      format && format->is_object() && format->value("type", "") != "text") {
    signs.structured_output = true;
  }
  const Json* messages = Find(body, "messages");
  if (!messages || !messages->is_array()) return signs;
  bool saw_user = false;
  for (const Json& m : *messages) {
    if (!m.is_object()) continue;
    std::string role = m.value("role", "");
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
  return HasSideCallMarker(Lower(std::string_view(signs.probe).substr(0, kSideCallProbeBytes)));
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
    id_ = chunk.value("id", "");
    model_ = chunk.value("model", "");
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
          size_t index = call.value("index", 0);
          if (index > 1024) continue;  // hostile upstream; a real model never gets here
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
