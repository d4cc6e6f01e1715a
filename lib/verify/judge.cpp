#include "verify/judge.h"

#include <curl/curl.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "base/clock.h"
#include "base/hash.h"

namespace forge::verify {
namespace {

using records::Json;

constexpr const char* kSystemPrompt =
    "You grade the work of an AI agent against a rubric. Read the rubric and the artefact, "
    "then reply with only a JSON object: {\"score\": <a number from 0 to 1>, \"reason\": "
    "\"<one sentence>\"}. 1 means the rubric is fully met, 0 not at all.";

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct HttpResult {
  long status = 0;
  std::string body;
};

// One POST. Transport failures are Unavailable with curl's message.
Result<HttpResult> PostJson(const std::string& url, const std::string& body,
                            const std::string& api_key, double timeout_sec) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::Internal("curl_easy_init failed");
  HttpResult result;
  struct curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  std::string auth = "Authorization: Bearer " + api_key;
  if (!api_key.empty()) headers = curl_slist_append(headers, auth.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_sec * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc == CURLE_OPERATION_TIMEDOUT) return Status::Busy("judge: no answer within " + std::to_string(timeout_sec) + " s");
  if (rc != CURLE_OK) return Status::Unavailable(std::string("judge: ") + curl_easy_strerror(rc));
  return result;
}

std::string Clip(const std::string& s, size_t n = 200) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

}  // namespace

Result<Json> ParseJudgeReply(const std::string& content) {
  // The first '{' through the last '}' tolerates prose and code fences around it.
  size_t open = content.find('{');
  size_t close = content.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return Status::InvalidData("judge reply holds no JSON object: \"" + Clip(content) + "\"");
  }
  Json j = Json::parse(content.substr(open, close - open + 1), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidData("judge reply is not a JSON object: \"" + Clip(content) + "\"");
  }
  auto score = j.find("score");
  if (score == j.end() || !score->is_number()) {
    return Status::InvalidData("judge reply has no numeric \"score\": \"" + Clip(content) + "\"");
  }
  double s = score->get<double>();
  if (!std::isfinite(s) || s < 0 || s > 1) {
    return Status::InvalidData("judge score " + std::to_string(s) + " is outside [0, 1]");
  }
  Json out = {{"score", s}};
  if (j.contains("reason") && j["reason"].is_string()) out["reason"] = j["reason"];
  return out;
}

Judge::Judge(JudgeOptions options, store::Store* store, Env& env)
    : options_(std::move(options)), store_(store), env_(env) {}

std::string Judge::CacheKey(const std::string& task_id, const std::string& model,
                            const std::string& rubric, const std::string& artefact) {
  std::string material = task_id;
  material += '\0';
  material += model;
  material += '\0';
  material += Sha256Hex(rubric);
  material += '\0';
  material += Sha256Hex(artefact);
  return Sha256Hex(material);
}

Result<Json> Judge::Ask(const std::string& model, const VerifierSpec& spec,
                        const std::string& artefact) {
  Json request = {
      {"model", model},
      {"temperature", 0},
      {"messages",
       Json::array({{{"role", "system"}, {"content", kSystemPrompt}},
                    {{"role", "user"},
                     {"content", "Rubric:\n" + spec.rubric + "\n\nArtefact:\n" + artefact}}})}};
  std::string url = options_.url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/chat/completions";
  const std::string body = request.dump();
  Status last = Status::Unavailable("judge: not called");
  for (int attempt = 1; attempt <= std::max(1, options_.attempts); ++attempt) {
    if (attempt > 1 &&
        env_.stop().WaitFor(std::chrono::duration<double>(options_.retry_delay_seconds * (1 << (attempt - 2))))) {
      return Status::Cancelled("stopped by a signal");
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++calls_made_;
    }
    auto response = PostJson(url, body, options_.api_key, spec.timeout_sec);
    if (!response.ok()) {
      last = response.status();
      if (response.status().kind() == Kind::kBusy) return last;  // the deadline is spent
      continue;
    }
    if (response->status == 429 || response->status >= 500) {
      last = Status::Unavailable("judge: HTTP " + std::to_string(response->status) + ": " + Clip(response->body));
      continue;
    }
    if (response->status != 200) {
      return Status::Protocol("judge: HTTP " + std::to_string(response->status) + ": " + Clip(response->body));
    }
    Json reply = Json::parse(response->body, nullptr, false);
    const Json* content = nullptr;
    if (!reply.is_discarded()) {
      auto ptr = "/choices/0/message/content"_json_pointer;
      if (reply.contains(ptr) && reply[ptr].is_string()) content = &reply[ptr];
    }
    if (content == nullptr) {
      return Status::Protocol("judge: no choices[0].message.content in the reply: " + Clip(response->body));
    }
    return ParseJudgeReply(content->get<std::string>());
  }
  return last;
}

Verdict Judge::Grade(const std::string& task_id, const VerifierSpec& spec,
                     const std::string& artefact, double threshold) {
  auto start = std::chrono::steady_clock::now();
  Verdict v;
  v.verifier = "judge";
  v.threshold = threshold;
  v.timeout_sec = spec.timeout_sec;
  const std::string model = spec.model.empty() ? options_.default_model : spec.model;
  auto finish = [&](Outcome outcome, std::string message) {
    v.outcome = outcome;
    v.message = std::move(message);
    v.seconds = SecondsSince(start);
    return v;
  };
  if (options_.url.empty()) return finish(Outcome::kVerifierError, "judge: no endpoint (--judge-url)");
  if (model.empty()) return finish(Outcome::kVerifierError, "judge: no model (task verifier.model or --judge-model)");

  const std::string key = CacheKey(task_id, model, spec.rubric, artefact);
  const std::string meta_key = "judge-cache:" + key;
  std::optional<Json> answer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) answer = it->second;
  }
  if (!answer && store_ != nullptr) {
    auto cached = store_->meta().Get(meta_key);
    if (cached.ok() && cached->has_value()) {
      Json j = Json::parse(**cached, nullptr, false);
      if (!j.is_discarded() && j.is_object() && j.contains("score")) answer = j;
    }
  }
  bool from_cache = answer.has_value();
  if (!answer) {
    auto asked = Ask(model, spec, artefact);
    if (!asked.ok()) {
      if (asked.status().kind() == Kind::kCancelled) return finish(Outcome::kCancelled, "stopped by a signal");
      return finish(asked.status().kind() == Kind::kBusy ? Outcome::kVerifierTimeout
                                                                 : Outcome::kVerifierError,
                    asked.status().message());
    }
    answer = *asked;
    std::lock_guard<std::mutex> lock(mutex_);
    memory_[key] = *answer;
    if (store_ != nullptr) {
      // A cache that cannot be written costs a call next time, not this verdict.
      (void)store_->meta().Set(meta_key, answer->dump());
    }
  }
  v.details["judge"] = {{"model", model}, {"cache_key", key}, {"cached", from_cache},
                        {"score", (*answer)["score"]}};
  if (answer->contains("reason")) v.details["judge"]["reason"] = (*answer)["reason"];
  v.reward = (*answer)["score"].get<double>();
  return finish(OutcomeForReward(*v.reward, threshold), "");
}

}  // namespace forge::verify
