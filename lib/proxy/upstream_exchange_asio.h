// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// The exchange stage of a call (call_handler_asio.h): its request sent to the
// upstreams, rollout-affine first, until one answers with a status line and
// headers (the body still to read, by the upstream API's relay); again after
// a retryable failure, with --upstream-retries. Shared by every upstream API
// (upstream_api_asio.h). Nothing here reads or writes a call's record: a failed
// attempt that is tried again is handed back to the caller, who records it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "proxy/asio.h"
#include "proxy/http_write_asio.h"
#include "proxy/metrics.h"
#include "proxy/outcome.h"
#include "proxy/upstream_asio.h"
#include "proxy/upstream_answer_asio.h"

namespace forge::proxy {

struct CutThrough;

// What the exchanges of every call share: the upstreams and the settings.
struct ExchangeServices {
  UpstreamPool& pool;
  Metrics& metrics;
  double idle_timeout;     // --upstream-idle-timeout
  int retries;             // --upstream-retries
  double retry_after_max;  // --retry-after-max
};

// One call's request, as its exchange sends it.
struct ExchangeRequest {
  const std::string& rollout;  // its upstream comes first (a rollout sticks to one: its prefix cache)
  std::function<RequestHead(const Upstream&)> head;
  BodyPieces body;
  std::function<void()> sent;  // runs once the request is sent, while the upstream works
  // A request cut_through_asio.h already sent whole: its answer is read first.
  CutThrough* forwarded = nullptr;
};

// Sends request until an upstream answers, and again, up to services.retries
// times, after a failure or a retryable error answer (429/502/503), handing
// each failed attempt to retried before the pause. True: answer holds an
// answer's head, its body (an error's too) still to read, its upstream
// counted outstanding. False: the call is to fail with
// exchange.FailureStatus() and exchange.error.
Task<bool> OpenExchange(const ExchangeServices& services, const ExchangeRequest& request, UpstreamAnswer& answer,
                        const std::function<void(FailedAttempt)>& retried);

}  // namespace forge::proxy
