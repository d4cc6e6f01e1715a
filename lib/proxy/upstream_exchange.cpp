// Opening a model call's upstream exchange: sending it to the upstreams
// until one answers, and again on a retryable failure; shared by the
// OpenAI-format path (call.cpp) and the Anthropic pass-through
// (anthropic_upstream.cpp).
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "base/json_field.h"
#include "proxy/http_read.h"
#include "proxy/http_write.h"
#include "proxy/ready_io.h"
#include "proxy/server.h"

namespace forge::proxy {

Task<void> Server::ExchangeWithUpstream(const std::string& rollout, UpstreamExchange& out,
                                        const std::function<RequestHead(const Upstream&)>& make_request,
                                        BodyPieces body, const std::function<void()>& after_send,
                                        CutThrough* sent) {
  out.error = "no upstream configured";
  std::vector<Upstream*> tried;
  int attempts = static_cast<int>(std::max<size_t>(upstreams_.size(), 1)) + 1;
  for (int attempt = 0; attempt < attempts && !out.conn; ++attempt) {
    const bool already_sent = sent && sent->conn;
    Upstream* upstream = already_sent ? sent->upstream : upstreams_.Pick(rollout, tried);
    if (!upstream) break;
    out.upstream = upstream;
    bool reused = false;
    beast::error_code ec;
    std::unique_ptr<UpstreamConn> c;
    if (already_sent) {
      c = std::move(sent->conn);
      reused = sent->reused;
    } else {
      c = co_await upstreams_.Connect(*upstream, ec, reused);
    }
    if (!ec) c->stream.watch_client(out.client);
    if (!ec) {
      if (!already_sent) {
        std::string header = make_request(*upstream).Text(body.size());
        c->stream.set_timeout(config_.upstream_idle_timeout);
        co_await WriteMessage(c->stream, header, body, ec);
        if (!ec && after_send) after_send();
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
                  std::to_string(static_cast<int>(config_.upstream_idle_timeout)) + " s";
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
    metrics_.upstream_errors.fetch_add(1);
  }
}

Task<bool> Server::OpenExchange(UpstreamExchange& exchange, store::CallRecord& rec, double t0,
                                const std::function<RequestHead(const Upstream&)>& make_request, BodyPieces body,
                                const std::function<void()>& after_send, CutThrough* sent, int retries) {
  for (int attempt = 0;; ++attempt) {
    co_await ExchangeWithUpstream(rec.rollout_id, exchange, make_request, body, after_send, sent);
    const http::fields* answer = exchange.conn ? &exchange.parser->get().base() : nullptr;
    int status = answer ? exchange.parser->get().result_int() : 502;
    if (attempt >= retries || exchange.client_gone || exchange.timed_out) break;
    if (answer && (status < 400 || !RetryableStatus(status, *answer, config_.retry_after_max))) break;
    std::string failure = exchange.error;
    if (answer) {
      // Read whole, so that the connection may serve again.
      std::string error_text;
      beast::error_code ec = co_await AppendWholeUpstreamBody(exchange, error_text);
      failure = UpstreamErrorMessage(status, error_text);
      if (!ec && exchange.parser->get().keep_alive()) upstreams_.Release(*exchange.upstream, std::move(exchange.conn));
    }
    co_await RecordRetry(exchange, answer, status, rec, t0, attempt, retries, failure);
    exchange.Reset();
    if (HasHungUp(*exchange.client)) {
      exchange.client_gone = true;
      exchange.error = kClientHungUpMessage;
      co_return false;
    }
  }
  if (!exchange.conn) co_return false;
  rec.upstream = exchange.upstream->url;
  exchange.outstanding.emplace(*exchange.upstream);
  co_return true;
}

Task<void> Server::RecordRetry(const UpstreamExchange& exchange, const http::fields* answer, int status,
                               const store::CallRecord& rec, double t0, int attempt, int retries,
                               const std::string& failure) {
  metrics_.upstream_retries.fetch_add(1);
  store::CallRecord failed = rec;
  if (exchange.upstream) failed.upstream = exchange.upstream->url;
  failed.http_status = status;
  failed.error = failure + fmt::format(" (retried by the proxy, attempt {} of {})", attempt + 1, retries + 1);
  failed.retry_key.clear();
  EndRecord(failed, t0);
  co_await Commit(std::move(failed));
  net::steady_timer pause(co_await net::this_coro::executor);
  pause.expires_after(SteadySeconds(RetryDelay(attempt + 1, answer)));
  beast::error_code ec;
  co_await pause.async_wait(Into(ec));
}

Task<bool> Server::ReadWholeAnswer(UpstreamExchange& exchange, std::string& out) {
  beast::error_code ec = co_await AppendWholeUpstreamBody(exchange, out);
  if (ec == ClientHungUp()) {
    exchange.client_gone = true;
    exchange.error = kClientHungUpMessage;
    co_return false;
  }
  if (ec) {
    exchange.timed_out = ec == beast::error::timeout;
    exchange.error = "upstream " + exchange.upstream->url + " failed mid-response: " + ec.message();
    co_return false;
  }
  if (exchange.parser->get().keep_alive()) upstreams_.Release(*exchange.upstream, std::move(exchange.conn));
  co_return true;
}

std::string UpstreamErrorMessage(int status, const std::string& body) {
  Json parsed = Json::parse(body, nullptr, false);
  std::string detail;
  if (parsed.is_object() && parsed.contains("error")) {
    const Json& e = parsed["error"];
    detail = e.is_object() ? JsonText(e, "message", e.dump()) : (e.is_string() ? e.get<std::string>() : e.dump());
  } else if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    detail = parsed["message"];
  } else {
    detail = body.substr(0, 512);
  }
  return "upstream answered " + std::to_string(status) + ": " + detail;
}

Task<beast::error_code> AppendWholeUpstreamBody(UpstreamExchange& exchange, std::string& out) {
  auto& parser = *exchange.parser;
  // A length is only the upstream's word: room for at most 1 MiB at a time.
  constexpr uint64_t kPiece = 16384, kMostRoom = 1 << 20;
  // out holds `have` bytes of body; past them, room already zeroed by an
  // earlier resize is read into again, so each byte is zero-filled once (a
  // resize per read zeroed the whole rest every time: for a 350 KB answer
  // of prompt ids, 16 MB of memset a call).
  size_t have = out.size();
  beast::error_code ec;
  while (!parser.is_done() && !ec) {
    uint64_t room = kPiece;
    if (auto rest = parser.content_length_remaining(); rest && *rest > 0) room = std::min(*rest, kMostRoom);
    if (out.size() < have + room) out.resize(have + room);
    parser.get().body().data = out.data() + have;
    parser.get().body().size = out.size() - have;
    co_await ReadHttp(exchange.conn->stream, exchange.conn->buffer, parser, ReadUntil::kSome, ec);
    if (ec == http::error::need_buffer) ec = {};
    have = out.size() - parser.get().body().size;
  }
  parser.get().body().data = nullptr;
  parser.get().body().size = 0;
  out.resize(have);
  co_return ec;
}

}  // namespace forge::proxy
