// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// The upstream side of a call, beside ClientFormat, its client side (as
// envoy's filters separate a request's decoding from its response's
// encoding): how a decoded request goes to the kind of server the proxy
// talks to, and how that server's answer reaches the client and the record.
// Two kinds (--upstream-api): an OpenAI-compatible server (vLLM, SGLang),
// to which every client format is translated, or its own formats passed as
// bytes (openai_upstream.cpp); and an Anthropic Messages API, to which
// Messages calls pass through (anthropic_upstream.cpp). The handler
// (call_handler_asio.h) drives either the same way: Prepare, then the exchange
// (upstream_exchange_asio.h) with Head and Body, then Relay, whose Outcome it
// commits.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "proxy/asio.h"
#include "proxy/client_stream_asio.h"
#include "proxy/decode.h"
#include "proxy/http_write_asio.h"
#include "proxy/metrics.h"
#include "proxy/outcome.h"
#include "proxy/proxy.h"
#include "proxy/upstream_asio.h"
#include "proxy/upstream_answer_asio.h"
#include "store/store.h"

namespace forge::proxy {

class UpstreamApi {
 public:
  virtual ~UpstreamApi() = default;
  // The upstream request made from the decoded call, and the record's
  // request side. client_body: the request's bytes (moved into the record).
  virtual void Prepare(std::string&& client_body, store::CallRecord& rec) = 0;
  // That request as sent to one upstream: its head, and its body.
  virtual RequestHead Head(const Upstream& upstream) const = 0;
  virtual BodyPieces Body() const = 0;
  // Whether a streamed call waiting for its first event gets SSE keepalive comments.
  virtual bool KeepsAlive() const = 0;
  // Relays the answer whose head the exchange read: events go to client as they
  // come (all but the final ones, held in the Outcome until the commit), and
  // the record's answer fields are filled.
  virtual Task<Outcome> Relay(UpstreamAnswer& answer, ClientStream& client, store::CallRecord& rec) = 0;
};

// Calls answered 200 without token ids (an upstream that ignores
// return_token_ids): counted, warned of once, and failed with
// --require-token-ids.
class TokenIdWatch {
 public:
  // The warning goes to env.
  TokenIdWatch(Metrics& metrics, Env& env, bool require) : metrics_(metrics), env_(env), require_(require) {}
  // Whether the call, answered 200, came without token ids and is to fail.
  bool Fails(const store::CallRecord& call);

 private:
  Metrics& metrics_;
  Env& env_;
  const bool require_;
  std::atomic<bool> warned_{false};
};

// What the upstream APIs of every call share.
struct UpstreamServices {
  UpstreamPool& pool;
  TokenIdWatch& token_ids;
  const std::vector<std::string>& urls;  // --upstream, kept out of what a client is told
};

// The upstream API for a decoded call (its request: the route, the format,
// the query and headers an Anthropic upstream is sent): kind's, or a refusal
// when kind serves no such request (an Anthropic upstream serves Messages
// only). cut_through: the body goes upstream as it arrives (its head must
// accept either answer, since whether it streams is not known yet).
std::optional<Refusal> ChooseUpstreamApi(UpstreamApiKind kind, DecodedCall& call, const Request& req,
                                         bool cut_through, const UpstreamServices& services,
                                         std::unique_ptr<UpstreamApi>& out);

// The two kinds (openai_upstream.cpp, anthropic_upstream.cpp).
std::unique_ptr<UpstreamApi> NewOpenAIUpstream(DecodedCall& call, bool cut_through, const UpstreamServices& services);
std::unique_ptr<UpstreamApi> NewAnthropicUpstream(DecodedCall& call, const Request& req,
                                                  const UpstreamServices& services);

}  // namespace forge::proxy
