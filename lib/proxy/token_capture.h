// Exact tokens for training: the proxy asks a vLLM-compatible upstream for
// token ids and per-token logprobs (return_token_ids, logprobs), takes them
// out of each response or stream chunk, and removes from what the client sees
// every field the client did not ask for itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace forge::proxy {

// What the client asked for on its own, so the rest can be stripped.
struct CaptureWants {
  bool completions = false;  // /v1/completions: logprobs is an int, not a bool
  bool logprobs = false;
  bool top_logprobs = false;
  bool token_ids = false;  // the client set return_token_ids itself
};

struct CapturedTokens {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> completion_ids;
  std::vector<float> logprobs;
  std::string mm_placeholders;  // vLLM's top-level placeholder ranges, as sent (empty: none)
};

// Adds the capture fields to an upstream request body and says what the client
// had asked for.
CaptureWants AddCaptureFields(nlohmann::json& body, bool completions);

// Takes prompt ids, completion ids and chosen-token logprobs of choice 0 from a
// whole response or one stream chunk (deltas append). Understands vLLM's
// token-id fields and the older "token_id:<n>" logprob token form.
void HarvestTokens(const nlohmann::json& response, CapturedTokens& into);

// Removes what the proxy added and the client did not ask for.
void StripCaptureFields(nlohmann::json& response, const CaptureWants& wants);


}  // namespace forge::proxy
