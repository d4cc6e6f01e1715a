#include "proxy/upstream_exchange_asio.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "proxy/asio.h"
#include "proxy/cut_through_asio.h"
#include "proxy/http_read_asio.h"
#include "proxy/ready_io_asio.h"
#include "proxy/upstream_faults.h"

namespace forge::proxy {

namespace {

// One attempt: the upstreams one after another until one answers with a
// head, into out. A refused or broken connection marks that upstream
// unhealthy and moves on; a kept-alive connection the upstream had closed
// is retried, not blamed; a timeout ends the attempt, since the generation
// may be running.
Task<void> ExchangeWithUpstream(const ExchangeServices& services, const ExchangeRequest& request,
                                UpstreamAnswer& out) {
  out.error = "no upstream configured";
  std::vector<Upstream*> tried;
  CutThrough* sent = request.forwarded;
  int attempts = static_cast<int>(std::max<size_t>(services.pool.size(), 1)) + 1;
  for (int attempt = 0; attempt < attempts && !out.conn; ++attempt) {
    const bool already_sent = sent && sent->conn;
    Upstream* upstream = already_sent ? sent->upstream : services.pool.Pick(request.rollout, tried);
    if (!upstream) break;
    out.upstream = upstream;
    bool reused = false;
    beast::error_code ec;
    std::unique_ptr<UpstreamConn> c;
    if (already_sent) {
      c = std::move(sent->conn);
      reused = sent->reused;
    } else {
      c = co_await services.pool.Connect(*upstream, ec, reused);
    }
    if (!ec) c->stream.watch_client(out.client);
    if (!ec) {
      if (!already_sent) {
        std::string header = request.head(*upstream).Text(request.body.size());
        c->stream.set_timeout(services.idle_timeout);
        co_await WriteMessage(c->stream, header, request.body, ec);
        if (!ec && request.sent) request.sent();
      }
      if (!ec) {
        out.parser.emplace();
        out.parser->body_limit(std::numeric_limits<std::uint64_t>::max());
        co_await ReadHttp(c->stream, c->buffer, *out.parser, ReadUntil::kHeader, ec);
      }
    }
    if (!ec) {
      out.conn = std::move(c);
      break;
    }
    if (ec == ClientHungUp()) {  // no one to answer: the upstream's connection goes, unblamed
      out.client_gone = true;
      out.error = "the client hung up before the upstream answered";
      break;
    }
    if (ec == beast::error::timeout) {  // a hang: the generation may be running; do not repeat it
      out.timed_out = true;
      out.error = "upstream " + upstream->url + " sent nothing for " +
                  std::to_string(static_cast<int>(services.idle_timeout)) + " s";
      break;
    }
    if (reused) {  // a kept-alive connection the upstream had closed: not the upstream's fault
      ++attempts;
      if (attempts > 64) break;
      continue;
    }
    upstream->healthy.store(false);
    tried.push_back(upstream);
    out.error = "upstream " + upstream->url + ": " + ec.message();
    services.metrics.upstream_errors.fetch_add(1);
  }
}

}  // namespace

Task<bool> OpenExchange(const ExchangeServices& services, const ExchangeRequest& request, UpstreamAnswer& answer,
                        const std::function<void(FailedAttempt)>& retried) {
  for (int attempt = 0;; ++attempt) {
    co_await ExchangeWithUpstream(services, request, answer);
    const bool head = answer.conn != nullptr;
    int status = head ? answer.parser->get().result_int() : 502;
    if (attempt >= services.retries || answer.client_gone || answer.timed_out) break;
    if (head && status < 400) break;
    // An error answer's retry headers: read on this error path only.
    Headers retry_headers = head ? RetryHeaders(answer.parser->get()) : Headers();
    if (head && !RetryableStatus(status, retry_headers, services.retry_after_max)) break;
    std::string failure = answer.error;
    if (head) {
      // Read whole, so that the connection may serve again.
      std::string error_text;
      beast::error_code ec = co_await AppendWholeUpstreamBody(answer, error_text);
      failure = UpstreamErrorMessage(status, error_text);
      if (!ec && answer.parser->get().keep_alive()) services.pool.Release(*answer.upstream, std::move(answer.conn));
    }
    services.metrics.upstream_retries.fetch_add(1);
    retried(FailedAttempt{answer.upstream ? answer.upstream->url : std::string(), status,
                          failure + fmt::format(" (retried by the proxy, attempt {} of {})", attempt + 1,
                                                services.retries + 1)});
    asio::steady_timer pause(co_await asio::this_coro::executor);
    pause.expires_after(SteadySeconds(RetryDelay(attempt + 1, retry_headers)));
    beast::error_code ec;
    co_await pause.async_wait(Into(ec));
    answer.Reset();
    if (HasHungUp(*answer.client)) {
      answer.client_gone = true;
      answer.error = kClientHungUpMessage;
      co_return false;
    }
  }
  if (!answer.conn) co_return false;
  answer.outstanding.emplace(*answer.upstream);
  co_return true;
}

}  // namespace forge::proxy
