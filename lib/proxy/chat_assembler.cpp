#include "proxy/chat_assembler.h"

#include "base/json_dump.h"
#include "base/json_field.h"
#include "base/json_parse.h"
#include "base/json_scan.h"

namespace forge::proxy {

using Json = nlohmann::json;

namespace {

// The lists of a choice's logprobs that a stream's pieces append to (chat's
// "content" and "refusal"; the completions form's four).
constexpr const char* kLogprobLists[] = {"content", "refusal", "token_logprobs", "tokens", "top_logprobs",
                                         "text_offset"};

void AppendLogprobs(Json& into, const Json& piece) {
  if (!piece.is_object()) return;
  if (into.is_null()) {
    into = piece;
    return;
  }
  for (const char* key : kLogprobLists) {
    auto it = piece.find(key);
    if (it == piece.end() || !it->is_array()) continue;
    Json& target = into[key];
    if (!target.is_array()) target = Json::array();
    for (const auto& item : *it) target.push_back(item);
  }
}

// Logprobs whose only list is "content" (what AppendLogprobs would fold).
bool OnlyContentLogprobs(const Json& piece) {
  auto content = piece.find("content");
  if (content == piece.end() || !content->is_array()) return false;
  for (const char* key : kLogprobLists) {
    if (auto it = piece.find(key); it != content && it != piece.end() && it->is_array()) return false;
  }
  return true;
}

}  // namespace

void ChatAssembler::Add(const Json& chunk) {
  if (!chunk.is_object()) return;
  ++chunks_;
  for (const char* key : {"id", "created", "model", "system_fingerprint"}) {
    if (chunk.contains(key) && !head_.contains(key)) head_[key] = chunk[key];
  }
  if (auto object = chunk.find("object"); object != chunk.end() && *object == "text_completion") completion_ = true;
  if (chunk.contains("usage") && !chunk["usage"].is_null()) usage_ = chunk["usage"];
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) return;
  for (const auto& c : *choices) {
    auto index = JsonIndex(c);
    if (!index || *index > kMaxStreamIndex) continue;
    Choice& choice = choices_[static_cast<int>(*index)];
    if (c.contains("text") && c["text"].is_string()) {
      completion_ = true;
      choice.text += c["text"].get<std::string>();
    }
    if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
      if (d->contains("role") && (*d)["role"].is_string()) choice.role = (*d)["role"];
      if (d->contains("content") && (*d)["content"].is_string()) {
        choice.content += (*d)["content"].get<std::string>();
        choice.has_content = true;
      }
      for (const char* key : {"reasoning", "reasoning_content"}) {
        if (d->contains(key) && (*d)[key].is_string()) {
          choice.reasoning += (*d)[key].get<std::string>();
          choice.has_reasoning = true;
        }
      }
      if (auto tc = d->find("tool_calls"); tc != d->end() && tc->is_array()) {
        for (const auto& fragment : *tc) {
          auto at = JsonIndex(fragment);
          if (!at || *at > kMaxStreamIndex) continue;
          Json& call = choice.tool_calls[static_cast<int>(*at)];
          if (call.is_null()) {
            call = {{"id", ""}, {"type", "function"}, {"function", {{"name", ""}, {"arguments", ""}}}};
          }
          if (fragment.contains("id") && fragment["id"].is_string()) call["id"] = fragment["id"];
          if (fragment.contains("type") && fragment["type"].is_string()) call["type"] = fragment["type"];
          if (auto fn = fragment.find("function"); fn != fragment.end() && fn->is_object()) {
            if (fn->contains("name") && (*fn)["name"].is_string()) {
              call["function"]["name"] = call["function"]["name"].get<std::string>() +
                                         (*fn)["name"].get<std::string>();
            }
            if (fn->contains("arguments") && (*fn)["arguments"].is_string()) {
              call["function"]["arguments"] = call["function"]["arguments"].get<std::string>() +
                                              (*fn)["arguments"].get<std::string>();
            }
          }
        }
      }
    }
    if (auto lp = c.find("logprobs"); lp != c.end() && lp->is_object()) {
      if (!choice.logprobs_pending.empty() && OnlyContentLogprobs(*lp)) {
        // Stays text, as the entries before it (a stream's last chunk often carries one).
        for (const Json& entry : (*lp)["content"]) {
          choice.logprobs_pending += ',';
          AppendJson(entry, choice.logprobs_pending);
        }
      } else {
        AppendPendingLogprobs(choice.logprobs_pending, choice.logprobs);
        choice.logprobs_pending.clear();
        AppendLogprobs(choice.logprobs, *lp);
      }
    }
    if (c.contains("finish_reason") && !c["finish_reason"].is_null()) choice.finish_reason = c["finish_reason"];
    if (c.contains("stop_reason") && !c["stop_reason"].is_null()) choice.stop_reason = c["stop_reason"];
  }
}

bool ChatAssembler::AddContentDelta(std::string_view chunk) {
  auto delta = ReadContentDelta(chunk);
  return delta && AddContentDelta(*delta);
}

bool ChatAssembler::AddContentDelta(const ContentDelta& delta) {
  if (chunks_ == 0) return false;
  // A head member the first chunk did not set would change the head: Add's work.
  for (size_t k = 0; k < ContentDelta::kHeadKeys.size(); ++k) {
    if ((delta.head_members >> k & 1u) && !head_.contains(ContentDelta::kHeadKeys[k])) return false;
  }
  // As AppendLogprobs folds {"content": [...]}: the first makes the
  // logprobs, later ones append to their content (an array, else Add's work).
  auto it = choices_.find(delta.index);
  if (!delta.logprobs_content.empty() && it != choices_.end() && !it->second.logprobs.is_null()) {
    auto content = it->second.logprobs.find("content");
    if (content == it->second.logprobs.end() || !content->is_array()) return false;
  }
  Choice& choice = it != choices_.end() ? it->second : choices_[delta.index];
  if (!delta.logprobs_content.empty()) {
    if (choice.logprobs.is_null()) choice.logprobs = {{"content", Json::array()}};
    std::string_view entries = delta.logprobs_content.substr(1, delta.logprobs_content.size() - 2);
    if (entries.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      if (!choice.logprobs_pending.empty()) choice.logprobs_pending += ',';
      choice.logprobs_pending += entries;
    }
  }
  ++chunks_;
  if (IsJsonString(delta.content)) {
    std::string_view raw = delta.content.substr(1, delta.content.size() - 2);
    if (raw.find('\\') == std::string_view::npos) {
      choice.content += raw;  // validated UTF-8 without escapes: the text itself
    } else {
      choice.content += DecodeJsonString(raw);
    }
    choice.has_content = true;
  }
  return true;
}

void ChatAssembler::AppendPendingLogprobs(const std::string& pending, Json& logprobs) {
  if (pending.empty()) return;
  Json entries = forge::ParseJsonOrDiscarded("[" + pending + "]");
  Json& target = logprobs["content"];
  if (!target.is_array()) target = Json::array();
  if (entries.is_array()) {
    for (auto& entry : entries) target.push_back(std::move(entry));
  }
}

Json ChatAssembler::ChoiceJson(int index, const Choice& c) const {
  Json choice = {{"index", index}};
  if (completion_) {
    choice["text"] = c.text;
  } else {
    Json message = {{"role", c.role.empty() ? "assistant" : c.role}};
    message["content"] = c.has_content ? Json(c.content) : Json(nullptr);
    if (c.has_reasoning) message["reasoning"] = c.reasoning;
    if (!c.tool_calls.empty()) {
      Json calls = Json::array();
      for (const auto& [i, call] : c.tool_calls) calls.push_back(call);
      message["tool_calls"] = std::move(calls);
    }
    choice["message"] = std::move(message);
  }
  choice["finish_reason"] = c.finish_reason;
  if (!c.stop_reason.is_null()) choice["stop_reason"] = c.stop_reason;
  return choice;
}

Json ChatAssembler::HeadJson(const Json* usage) const {
  Json out = head_;
  out["object"] = completion_ ? "text_completion" : "chat.completion";
  if (usage && !usage->is_null()) {
    out["usage"] = *usage;
  } else if (!usage_.is_null()) {
    out["usage"] = usage_;
  }
  return out;
}

Json ChatAssembler::Result() const {
  Json out = HeadJson(nullptr);
  Json choices = Json::array();
  for (const auto& [index, c] : choices_) {
    Json choice = ChoiceJson(index, c);
    Json logprobs = c.logprobs;
    AppendPendingLogprobs(c.logprobs_pending, logprobs);
    choice["logprobs"] = std::move(logprobs);
    choices.push_back(std::move(choice));
  }
  out["choices"] = std::move(choices);
  return out;
}

// A choice's logprobs as text: the entries taken as text are spliced in as
// they came (validated JSON), after any that Add folded as documents.
std::string ChatAssembler::LogprobsText(const Choice& c) {
  if (c.logprobs_pending.empty()) return DumpJson(c.logprobs);
  Json rest = c.logprobs;  // an object with "content" (AddContentDelta made it so)
  std::string content = "[";
  if (auto it = rest.find("content"); it != rest.end()) {
    if (it->is_array() && !it->empty()) {
      content = DumpJson(*it);
      content.back() = ',';
    }
    rest.erase(it);
  }
  content += c.logprobs_pending;
  content += ']';
  std::string text = DumpJson(rest);  // "{...}"
  text.pop_back();
  if (text.size() > 1) text += ',';
  text += "\"content\":";
  text += content;
  text += '}';
  return text;
}

std::string ChatAssembler::ChoicesText() const {
  std::string text = ",\"choices\":[";
  bool first = true;
  for (const auto& [index, c] : choices_) {
    if (!first) text += ',';
    first = false;
    std::string choice = DumpJson(ChoiceJson(index, c));  // "{"index":...}"
    text += "{\"logprobs\":";
    text += LogprobsText(c);
    text += ',';
    text.append(choice, 1, std::string::npos);
  }
  text += "]}";
  return text;
}

std::string ChatAssembler::HeadText(const Json* usage) const {
  std::string text = DumpJson(HeadJson(usage));  // an object with "object" at least
  text.pop_back();
  return text;
}

std::string ChatAssembler::ResultText(const Json* usage) const { return HeadText(usage) + ChoicesText(); }

std::pair<std::string, std::string> ChatAssembler::ResultTexts(const Json& usage) const {
  const std::string choices = ChoicesText();
  std::string own = HeadText(nullptr) + choices;
  if (usage.is_null()) return {own, own};
  return {std::move(own), HeadText(&usage) + choices};
}

std::string ChatAssembler::FinishReason() const {
  if (choices_.empty()) return "";
  const Json& reason = choices_.begin()->second.finish_reason;
  return reason.is_string() ? reason.get<std::string>() : "";
}

std::string FinishReasonOf(const nlohmann::json& response) {
  if (!response.is_object() || !response.contains("choices") || !response["choices"].is_array() ||
      response["choices"].empty()) {
    return "";
  }
  const nlohmann::json& fr = response["choices"][0].value("finish_reason", nlohmann::json());
  return fr.is_string() ? fr.get<std::string>() : "";
}

}  // namespace forge::proxy
