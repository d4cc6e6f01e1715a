#include "proxy/token_capture.h"

#include <cstdlib>
#include <string>

#include "base/json_field.h"

namespace forge::proxy {

using Json = nlohmann::json;

namespace {

void AppendIds(const Json& ids, std::vector<int32_t>& into) {
  if (!ids.is_array()) return;
  for (const auto& id : ids) {
    if (id.is_number_integer()) into.push_back(id.get<int32_t>());
  }
}

// "token_id:123" → 123 (vLLM --return-tokens-as-token-ids), else -1.
int64_t TokenIdFromString(const Json& token) {
  if (!token.is_string()) return -1;
  const std::string& s = token.get_ref<const std::string&>();
  constexpr std::string_view kPrefix = "token_id:";
  if (s.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str() + kPrefix.size(), &end, 10);
  if (end == s.c_str() + kPrefix.size() || *end != '\0') return -1;
  return v;
}

}  // namespace

CaptureWants AddCaptureFields(Json& body, bool completions) {
  CaptureWants wants;
  wants.completions = completions;
  wants.token_ids = JsonTrue(body, "return_token_ids");
  if (completions) {
    // logprobs: int (number of alternatives); 0 returns the chosen token's only.
    wants.logprobs = body.contains("logprobs") && body["logprobs"].is_number_integer();
    wants.top_logprobs = wants.logprobs && body["logprobs"].get<int64_t>() > 0;
    if (!wants.logprobs) body["logprobs"] = 0;
  } else {
    wants.logprobs = JsonTrue(body, "logprobs");
    wants.top_logprobs = body.contains("top_logprobs") && body["top_logprobs"].is_number_integer() &&
                         body["top_logprobs"].get<int64_t>() > 0;
    if (!wants.logprobs) {
      body["logprobs"] = true;
      body["top_logprobs"] = 0;
    }
  }
  body["return_token_ids"] = true;
  return wants;
}

void HarvestTokens(const Json& response, CapturedTokens& into) {
  if (!response.is_object()) return;
  if (auto p = response.find("prompt_token_ids"); p != response.end()) AppendIds(*p, into.prompt_ids);
  if (auto p = response.find("mm_placeholders"); p != response.end() && !p->is_null()) {
    into.mm_placeholders = p->dump();
  }
  auto choices = response.find("choices");
  if (choices == response.end() || !choices->is_array()) return;
  for (const auto& choice : *choices) {
    if (JsonIndex(choice) != size_t{0}) continue;
    // /v1/completions puts prompt ids on the choice.
    if (auto p = choice.find("prompt_token_ids"); p != choice.end() && into.prompt_ids.empty()) {
      AppendIds(*p, into.prompt_ids);
    }
    bool have_ids = false;
    if (auto t = choice.find("token_ids"); t != choice.end() && t->is_array()) {
      AppendIds(*t, into.completion_ids);
      have_ids = true;
    }
    auto lp = choice.find("logprobs");
    if (lp == choice.end() || !lp->is_object()) continue;
    if (auto content = lp->find("content"); content != lp->end() && content->is_array()) {
      for (const auto& entry : *content) {
        if (entry.contains("logprob") && entry["logprob"].is_number()) {
          into.logprobs.push_back(entry["logprob"].get<float>());
        }
        if (!have_ids) {
          int64_t id = TokenIdFromString(entry.value("token", Json()));
          if (id >= 0) into.completion_ids.push_back(static_cast<int32_t>(id));
        }
      }
    } else if (auto values = lp->find("token_logprobs"); values != lp->end() && values->is_array()) {
      for (const auto& v : *values) into.logprobs.push_back(v.is_number() ? v.get<float>() : 0.0f);
      if (!have_ids) {
        if (auto tokens = lp->find("tokens"); tokens != lp->end() && tokens->is_array()) {
          for (const auto& t : *tokens) {
            int64_t id = TokenIdFromString(t);
            if (id >= 0) into.completion_ids.push_back(static_cast<int32_t>(id));
          }
        }
      }
    }
  }
}

void StripCaptureFields(Json& response, const CaptureWants& wants) {
  if (!response.is_object()) return;
  if (!wants.token_ids) {
    response.erase("prompt_token_ids");
    response.erase("mm_placeholders");
  }
  auto choices = response.find("choices");
  if (choices == response.end() || !choices->is_array()) return;
  for (auto& choice : *choices) {
    if (!choice.is_object()) continue;
    if (!wants.token_ids) {
      choice.erase("token_ids");
      choice.erase("prompt_token_ids");
    }
    // OpenAI sends "logprobs": null when none were asked for.
    if (!wants.logprobs && choice.contains("logprobs")) choice["logprobs"] = nullptr;
  }
}

}  // namespace forge::proxy
