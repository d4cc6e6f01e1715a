// Folds a stream of OpenAI chat.completion.chunk (or text_completion) events
// into the single response the same call would have returned unstreamed:
// content and reasoning concatenated, tool-call argument fragments joined by
// index, logprobs appended, finish reason and usage kept. The record of a
// streamed call stores this form.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "proxy/pass_through.h"

namespace forge::proxy {

class ChatAssembler {
 public:
  void Add(const nlohmann::json& chunk);
  // The common chunk, folded from its validated JSON text without building a
  // document: one choice whose delta is at most a piece of content, with no
  // logprobs and no finish, after a first chunk that set the head. Returns
  // false, having changed nothing, for any other chunk: then use Add.
  bool AddContentDelta(std::string_view chunk);
  // The same chunk, read already. Its logprobs_content, if any, is kept as
  // text until the result is built (a stream's logprobs, parsed once).
  bool AddContentDelta(const ContentDelta& delta);
  // chat.completion for chat chunks, text_completion for completion chunks.
  nlohmann::json Result() const;
  // The same response as its JSON text, with usage (if given and not null)
  // in place of the stream's own. The logprobs taken as text are spliced in
  // as they came, never made a document: a stream's logprobs are an object
  // per token, most of what a recorded answer with logprobs costs.
  std::string ResultText(const nlohmann::json* usage) const;
  // Both at once, the choices (and their logprobs) written once: the
  // stream's own response, and the same with usage (if not null).
  std::pair<std::string, std::string> ResultTexts(const nlohmann::json& usage) const;
  // Choice 0's (the first choice's) finish_reason, if a string.
  std::string FinishReason() const;
  bool empty() const { return chunks_ == 0; }

 private:
  struct Choice {
    std::string role;
    std::string content, reasoning, text;
    bool has_content = false, has_reasoning = false;
    std::map<int, nlohmann::json> tool_calls;
    nlohmann::json logprobs;  // null until one arrives
    // Entries of logprobs.content that AddContentDelta took as text, comma
    // separated, not yet in logprobs (which is then an object with a
    // "content" member).
    std::string logprobs_pending;
    nlohmann::json finish_reason;
    nlohmann::json stop_reason;
  };
  static void AppendPendingLogprobs(const std::string& pending, nlohmann::json& logprobs);
  static std::string LogprobsText(const Choice& c);
  nlohmann::json HeadJson(const nlohmann::json* usage) const;
  std::string HeadText(const nlohmann::json* usage) const;     // the head's text, without its closing brace
  std::string ChoicesText() const;                             // ,"choices":[...]} to close it
  nlohmann::json ChoiceJson(int index, const Choice& c) const;

  size_t chunks_ = 0;
  bool completion_ = false;
  nlohmann::json head_ = nlohmann::json::object();  // id, created, model
  nlohmann::json usage_;
  std::map<int, Choice> choices_;
};

// Choice 0's finish_reason in a whole chat response, if a string, else "".
std::string FinishReasonOf(const nlohmann::json& chat_response);

}  // namespace forge::proxy
