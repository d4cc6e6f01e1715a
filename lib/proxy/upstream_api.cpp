#include "proxy/upstream_api_asio.h"

#include <fmt/format.h>

#include "proxy/asio.h"

namespace forge::proxy {

std::optional<Refusal> ChooseUpstreamApi(UpstreamApiKind kind, DecodedCall& call, const Request& req,
                                         bool cut_through, const UpstreamServices& services,
                                         std::unique_ptr<UpstreamApi>& out) {
  if (kind == UpstreamApiKind::kOpenAI) {
    out = NewOpenAIUpstream(call, cut_through, services);
    return std::nullopt;
  }
  if (call.url.format != FormatId::kAnthropic && call.url.format != FormatId::kAnthropicCountTokens) {
    return Refusal{400, "this proxy's upstream speaks Anthropic Messages (--upstream-api anthropic); "
                        "only /v1/messages and /v1/messages/count_tokens are served", {}};
  }
  out = NewAnthropicUpstream(call, req, services);
  return std::nullopt;
}

bool TokenIdWatch::Fails(const store::CallRecord& call) {
  if (!call.prompt_ids.empty() || !call.completion_ids.empty()) return false;
  metrics_.calls_without_token_ids.fetch_add(1, std::memory_order_relaxed);
  if (!warned_.exchange(true)) {
    env_.Warn(fmt::format("upstream {} answered a call of rollout {} without token ids: it ignores return_token_ids, so "
                          "its calls are useless for RL training ({}; counted in "
                          "forge_proxy_calls_without_token_ids_total; warned once)",
                          call.upstream, call.rollout_id,
                          require_ ? "--require-token-ids fails them"
                                   : "recorded anyway; --require-token-ids fails them"));
  }
  return require_;
}

}  // namespace forge::proxy
