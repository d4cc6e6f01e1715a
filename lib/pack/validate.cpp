#include "pack/validate.h"

namespace forge::pack {

bool IsStopFinish(const std::string& r) {
  // Chat completions says stop/tool_calls; a hosted teacher recorded in its
  // own dialect may say end_turn/tool_use (Anthropic) or STOP (Gemini).
  return r == "stop" || r == "tool_calls" || r == "end_turn" || r == "tool_use" || r == "STOP";
}

std::string InvalidReason(const Sample& s, const ValidationOptions& o) {
  if (s.from_messages) {
    if (s.messages.empty() || s.messages.back().value("role", "") != "assistant") {
      return "no_assistant_message";
    }
    if (!IsStopFinish(s.finish_reason)) return "not_stopped";
    return "";
  }
  if (s.trainable_tokens() == 0) return "no_trainable_tokens";
  if (s.loss_mask.back() != 1) return "last_token_not_trainable";
  if (!IsStopFinish(s.finish_reason)) return "not_stopped";
  if (!o.stop_ids.empty() && !o.stop_ids.count(s.input_ids.back())) return "not_stop_token";
  if (o.min_tokens && s.input_ids.size() < o.min_tokens) return "too_short";
  if (o.max_tokens && s.input_ids.size() > o.max_tokens) return "too_long";
  if (o.require_logprobs && !s.logprobs_complete) return "logprobs_missing";
  return "";
}

}  // namespace forge::pack
