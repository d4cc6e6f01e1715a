#include "proxy/server_asio.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "proxy/asio.h"
#include "proxy/cut_through_asio.h"
#include "proxy/format_registry.h"
#include "proxy/formats/openai_errors.h"
#include "proxy/http_read_asio.h"
#include "proxy/http_write_asio.h"
#include "proxy/ready_io_asio.h"

namespace forge::proxy {
namespace {

constexpr std::string_view kPolicyVersionKey = "proxy.policy_version";

std::string QueryParam(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return std::string(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return "";
}

// (Braced JSON literals live outside coroutines: g++12 rejects their arrays there.)
std::string HealthBody(bool draining) { return Json{{"status", draining ? "draining" : "ok"}}.dump(); }

std::string ModelList(const std::vector<std::string>& models) {
  Json data = Json::array();
  for (const auto& m : models) data.push_back({{"id", m}, {"object", "model"}, {"owned_by", "forge"}});
  return Json{{"object", "list"}, {"data", data}}.dump();
}

// The policy version the store kept from an earlier run (0: none).
int64_t StoredPolicyVersion(store::Store& store) {
  auto v = store.meta().Get(std::string(kPolicyVersionKey));
  return v.ok() && v->has_value() ? std::atoll((*v)->c_str()) : 0;
}

}  // namespace

Server::Server(const ProxyConfig& config, UpstreamApiKind upstream_api, std::vector<asio::io_context*> contexts,
               store::Store& writer_store, store::Store& reader_store, UpstreamPool& upstreams, ReplayIndex* replay)
    : config_(config),
      contexts_(std::move(contexts)),
      io_(*contexts_.front()),
      reader_store_(reader_store),
      writer_store_(writer_store),
      upstreams_(upstreams),
      replay_(replay),
      secrets_(reader_store, config.secret_cache_ttl),
      admission_(metrics_, config.max_per_rollout, StoredPolicyVersion(reader_store)),
      token_ids_(metrics_, *config.env, config.require_token_ids),
      upstream_api_(upstream_api),
      acceptor_(asio::make_strand(io_)) {}

Status Server::Open() {
  auto recorder = Recorder::Create(writer_store_, metrics_, *config_.env);
  if (!recorder.ok()) return recorder.status();
  recorder_ = std::move(*recorder);
  calls_.reset(new CallServices{
      config_, upstream_api_, stopping_, secrets_, admission_, replay_, retry_keys_, metrics_,
      ExchangeServices{upstreams_, metrics_, config_.upstream_idle_timeout, config_.upstream_retries,
                       config_.retry_after_max},
      UpstreamServices{upstreams_, token_ids_, config_.upstreams},
      CallRecording::Services{*recorder_, metrics_, admission_}});
  beast::error_code ec;
  auto address = asio::ip::make_address(config_.listen_host, ec);
  if (ec) return Status::BadConfig("--listen " + config_.listen_host + ": " + ec.message());
  tcp::endpoint endpoint(address, config_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on " + config_.listen_host + ":" + std::to_string(config_.port) +
                               ": " + ec.message());
  }
  return Status::Ok();
}

void Server::Start() {
  asio::co_spawn(acceptor_.get_executor(), AcceptLoop(), asio::detached);
  asio::co_spawn(asio::make_strand(io_), WatchStop(), asio::detached);
  for (asio::io_context* context : contexts_) asio::co_spawn(*context, SweepWaits(), asio::detached);
  if (!upstreams_.empty() && config_.health_interval > 0) {
    asio::co_spawn(asio::make_strand(io_), upstreams_.HealthLoop(config_.health_path, config_.health_interval, stopping_),
                  asio::detached);
  }
}

void Server::Finish() {
  if (recorder_) recorder_->Stop();
}

Task<void> Server::AcceptLoop() {
  // One asynchronous accept's completion waits its turn behind every
  // handler already queued, so under a thousand busy streams accepting one
  // connection per wake-up left the last of a burst waiting seconds for its
  // first byte. Each wake-up therefore takes what the listen queue holds, up
  // to a bound that keeps the streams' own handlers from waiting long.
  constexpr int kMaxAcceptsPerWake = 256;
  // An accept that fails for want of a file descriptor or memory leaves the
  // connection in the listen queue, so trying again at once fails at once:
  // a loop on a core. Retried this often instead, until calls end.
  constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
  asio::steady_timer retry(acceptor_.get_executor());
  bool failing = false;
  beast::error_code ec;
  acceptor_.non_blocking(true, ec);
  for (;;) {
    // Each context has one thread, so a connection needs no strand.
    tcp::socket socket(contexts_[next_context_++ % contexts_.size()]->get_executor());
    co_await acceptor_.async_accept(socket, Into(ec));
    if (ec) {
      if (!acceptor_.is_open()) co_return;
      metrics_.accept_errors.fetch_add(1);
      if (!failing) {
        config_.env->Warn(fmt::format("cannot accept connections: {} ({} open; retrying every {} ms, the rest wait in the "
                                      "listen queue)",
                                      ec.message(), metrics_.open_connections.load(), kAcceptRetry.count()));
      }
      failing = true;
      retry.expires_after(kAcceptRetry);
      co_await retry.async_wait(Into(ec));
      continue;
    }
    if (failing) config_.env->Note("accepting connections again");
    failing = false;
    StartSession(std::move(socket));
    for (int more = 1; more < kMaxAcceptsPerWake; ++more) {
      tcp::socket next(contexts_[next_context_ % contexts_.size()]->get_executor());
      acceptor_.accept(next, ec);
      if (ec) break;  // would_block: the queue is empty (a failure: the next wake-up meets it)
      ++next_context_;
      StartSession(std::move(next));
    }
  }
}

void Server::StartSession(tcp::socket socket) {
  auto executor = socket.get_executor();
  asio::co_spawn(executor, Session(std::move(socket)), asio::detached);
}

// Ends the socket waits past their deadline on this context (ready_io_asio.h),
// often enough for the upstream timeout to hold within a quarter of itself.
// Being the earliest timer, it also keeps the keepalive and pause timers
// from re-arming asio's timerfd (a system call) each time.
Task<void> Server::SweepWaits() {
  double timeout = config_.upstream_idle_timeout;
  auto interval = SteadySeconds(timeout > 0 ? std::clamp(timeout / 4, 0.01, 1.0) : 1.0);
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  for (;;) {
    timer.expires_after(interval);
    beast::error_code ec;
    co_await timer.async_wait(Into(ec));
    SweepExpiredWaits(executor.context(), std::chrono::steady_clock::now());
  }
}

Task<void> Server::WatchStop() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!config_.env->stop().requested()) {
    timer.expires_after(std::chrono::milliseconds(50));
    beast::error_code ec;
    co_await timer.async_wait(Into(ec));
  }
  // Stop taking connections, let the calls in flight finish and commit.
  stopping_.store(true);
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ec;
    acceptor_.close(ec);
  });
  double deadline = MonotonicSeconds() + config_.drain_timeout;
  while (metrics_.in_flight.load() > 0 && MonotonicSeconds() < deadline) {
    timer.expires_after(std::chrono::milliseconds(20));
    beast::error_code ec;
    co_await timer.async_wait(Into(ec));
  }
  if (metrics_.in_flight.load() > 0) {
    config_.env->Warn("drain timeout: " + std::to_string(metrics_.in_flight.load()) + " calls still in flight");
  }
  for (asio::io_context* context : contexts_) context->stop();
}

namespace {
constexpr size_t kIdleReadBuffer = 16 * 1024;
// A body this long starts upstream before it has all arrived (a harness's
// conversation: store-and-forward put its whole transfer on the call's path twice).
constexpr size_t kCutThroughBytes = 64 * 1024;

// A request line longer than this is answered 414, a header (all its
// fields) longer than this or with more fields 431: nginx's
// large_client_header_buffers (4 of 8 KB) and a bound no harness comes near
// (Claude Code sends some thirty fields, 3 KB).
constexpr size_t kMaxRequestLine = 8 * 1024;
constexpr uint32_t kMaxHeaderBytes = 32 * 1024;
constexpr size_t kMaxHeaderFields = 256;

// Reads the client's requests from its socket: each read within timeout
// seconds, and all of them before deadline (a monotonic time; 0: none).
struct ClientReader {
  tcp::socket& socket;
  double timeout;
  double deadline = 0;
  Task<size_t> ReadSome(asio::mutable_buffer into, beast::error_code& ec) {
    double wait = timeout;
    if (deadline > 0) wait = std::max(0.001, deadline - MonotonicSeconds());
    return ReadSomeReady(socket, into, wait, ec);
  }
};

// The status a request that could not be read is answered with, or 0 when
// the connection just closes (the client went). long_line: a header too
// long because of its request line.
int UnreadableRequestStatus(const beast::error_code& ec, bool long_line) {
  if (ec == beast::error::timeout) return 408;
  if (ec == http::error::body_limit) return 413;
  if (ec == http::error::header_limit) return long_line ? 414 : 431;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return 0;
  return ec.category() == beast::error_code(http::error::bad_method).category() ? 400 : 0;  // else a socket error
}

std::string UnreadableRequestMessage(int status, const beast::error_code& ec, uint64_t body_limit) {
  switch (status) {
    case 408: return "the request did not arrive in time (--header-timeout)";
    case 413: return "request body exceeds the proxy's limit of " + std::to_string(body_limit) + " bytes (--body-limit)";
    case 414: return "request line longer than " + std::to_string(kMaxRequestLine) + " bytes";
    case 431: return "request header longer than " + std::to_string(kMaxHeaderBytes) + " bytes or with more than " +
                     std::to_string(kMaxHeaderFields) + " fields";
    default: return "malformed request: " + ec.message();
  }
}

// Lingering close (nginx's lingering_close): after answering a request whose
// body it did not read (a 413, a 400 before the body), the proxy stops
// writing, then reads and drops what the client still sends until it closes,
// for at most this long. Closing with unread bytes would send a reset, and a
// client still sending would lose the answer to it.
constexpr double kLingerSeconds = 5;
constexpr double kLingerReadSeconds = 2;

Task<void> DrainBeforeClose(ClientReader& reader) {
  reader.timeout = kLingerReadSeconds;
  reader.deadline = MonotonicSeconds() + kLingerSeconds;
  std::unique_ptr<char[]> scratch(new char[64 * 1024]);
  beast::error_code ec;
  while (!ec) co_await reader.ReadSome(asio::buffer(scratch.get(), 64 * 1024), ec);
}

}  // namespace

Task<void> Server::Session(tcp::socket socket) {
  metrics_.open_connections.fetch_add(1);
  beast::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  socket.non_blocking(true, ec);
  // A new connection gets --header-timeout for its first request's whole
  // header, a kept-alive one --idle-timeout to begin its next, and then the
  // header timeout for the rest of that header; a body gets the header
  // timeout between reads (nginx: client_header_timeout, keepalive_timeout,
  // client_body_timeout).
  ClientReader reader{socket, config_.header_timeout};
  beast::flat_buffer buffer;
  bool linger = false;  // answered before reading all the client sent
  for (bool first = true;; first = false) {
    ArrivingBody arriving;
    bool body_arriving = false;
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(config_.body_limit);
    if (buffer.size() == 0) {
      reader.timeout = first ? config_.header_timeout : config_.idle_timeout;
      reader.deadline = 0;
      size_t n = co_await reader.ReadSome(buffer.prepare(kIdleReadBuffer), ec);
      if (ec) break;  // closed, or idle too long: nothing to answer
      buffer.commit(n);
    }
    reader.deadline = config_.header_timeout > 0 ? MonotonicSeconds() + config_.header_timeout : 0;
    co_await ReadHttp(reader, buffer, parser, ReadUntil::kHeader, ec);
    reader.deadline = 0;
    reader.timeout = config_.header_timeout;
    bool long_line = false;  // the header is too long for its request line: 414, not 431
    if (ec == http::error::header_limit) {
      long_line = parser.get().target().empty();  // the request line never ended
    } else if (!ec && parser.get().target().size() > kMaxRequestLine) {
      ec = http::error::header_limit;
      long_line = true;
    } else if (!ec && static_cast<size_t>(std::distance(parser.get().begin(), parser.get().end())) > kMaxHeaderFields) {
      ec = http::error::header_limit;
    }
    if (!ec && !parser.is_done() && parser.get().version() >= 11 &&
        beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      // The client holds the body back until told to send it (curl does for
      // a large one, and would otherwise wait a second).
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      co_await WriteAllReady(socket, asio::buffer(kContinue.data(), kContinue.size()), 0, ec);
    }
    if (!ec && !parser.is_done()) {
      // A large body (a harness resends its whole conversation) goes
      // straight into the request; Content-Length was checked against the
      // limit with the header.
      auto length = parser.content_length();
      if (length && *length >= kCutThroughBytes && parser.get().method() == http::verb::post) {
        // What has come is kept; the call reads the rest as it goes (Handle).
        std::string& body = parser.get().body();
        body.resize(static_cast<size_t>(*length));
        arriving.have = asio::buffer_copy(asio::buffer(body), buffer.data());
        buffer.consume(arriving.have);
        arriving.read_some = [&reader](asio::mutable_buffer into, beast::error_code& read_ec) {
          return reader.ReadSome(into, read_ec);
        };
        body_arriving = true;
      } else if (length && *length > kIdleReadBuffer) {
        co_await ReadBodyInto(reader, buffer, static_cast<size_t>(*length), parser.get().body(), ec);
      } else {
        co_await ReadHttp(reader, buffer, parser, ReadUntil::kMessage, ec);
      }
    }
    if (ec) {
      // As nginx does: a status and a body (in the shape of the client's
      // format where the path tells it), then the connection closes.
      if (int status = UnreadableRequestStatus(ec, long_line)) {
        metrics_.client_errors.fetch_add(1);
        metrics_.malformed_requests.fetch_add(1);
        Request req;
        req.keep_alive(false);
        std::string_view path;
        path = std::string_view(parser.get().target().data(), parser.get().target().size());  // empty if never read
        co_await Send(socket, req, static_cast<http::status>(status),
                      ErrorBodyForPath(path, status, UnreadableRequestMessage(status, ec, config_.body_limit)).dump());
        linger = status != 408;
      }
      break;
    }
    // An open connection keeps no more than a small buffer, and none when it
    // holds nothing (a stream may stay open for minutes).
    if (buffer.size() == 0 || (buffer.capacity() > kIdleReadBuffer && buffer.size() <= kIdleReadBuffer)) {
      buffer.shrink_to_fit();
    }
    metrics_.requests.fetch_add(1);
    Request req = parser.release();
    // The last line of defence: a request or an upstream answer that some
    // reader did not expect (a value of the wrong type where nlohmann throws)
    // ends this connection with a warning, never the process serving others.
    bool keep = false;
    std::string internal_error;
    try {
      keep = co_await Handle(socket, req, body_arriving ? &arriving : nullptr);
    } catch (const std::exception& e) {
      internal_error = e.what();
    }
    if (!internal_error.empty()) {
      config_.env->Warn(fmt::format("{} {}: internal error, connection closed: {}", std::string(req.method_string()),
                                    std::string(req.target()), internal_error));
      break;
    }
    if (keep && body_arriving && arriving.have < req.body().size()) {
      // Answered (an error) before the body was all read: read past it, so
      // the next request on the connection starts where it should.
      co_await ReadRestOfBody(arriving, req.body(), ec);
      keep = !ec;
    }
    if (!keep || !req.keep_alive()) {
      linger = body_arriving && arriving.have < req.body().size();
      break;
    }
  }
  socket.shutdown(tcp::socket::shutdown_send, ec);
  if (linger) co_await DrainBeforeClose(reader);
  metrics_.open_connections.fetch_sub(1);
}

Task<bool> Server::Send(tcp::socket& client, Request& req, http::status status, std::string body,
                        std::string_view content_type, Headers headers) {
  co_return co_await SendResponse(client, req, !stopping_.load(), status, std::move(body), content_type,
                                  std::move(headers));
}

Task<bool> Server::Handle(tcp::socket& client, Request& req, ArrivingBody* arriving) {
  std::string_view target(req.target().data(), req.target().size());
  size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);

  // /r/<rollout>/v1/...: attribution by path.
  std::string path_rollout;
  if (path.rfind("/r/", 0) == 0) {
    size_t end = path.find('/', 3);
    path_rollout = std::string(path.substr(3, end == std::string_view::npos ? std::string_view::npos : end - 3));
    path = end == std::string_view::npos ? std::string_view("/") : path.substr(end);
  }
  const Route* route = FindRoute(std::string_view(req.method_string().data(), req.method_string().size()), path);
  if (arriving && !(route && route->passes_through())) {
    // Only a chat or completions call forwards its body as it arrives.
    beast::error_code ec;
    co_await ReadRestOfBody(*arriving, req.body(), ec);
    if (ec) co_return false;
    arriving = nullptr;
  }
  bool get = req.method() == http::verb::get;
  if (get && path == "/healthz") {
    co_return co_await Send(client, req, http::status::ok, HealthBody(stopping_.load()));
  }
  if (get && path == "/metrics") {
    co_return co_await Send(client, req, http::status::ok, metrics_.Render(), "text/plain; version=0.0.4");
  }
  if (get && path == "/v1/models") co_return co_await HandleModels(client, req);
  if (path.rfind("/admin/", 0) == 0) co_return co_await HandleAdmin(client, req, path, query);
  if (route) {
    CallHandler call(*calls_, client, req, *route);
    co_return co_await call.Run(std::move(path_rollout), arriving);
  }
  metrics_.client_errors.fetch_add(1);
  // A path served for other methods, or a method served nowhere: 405 (as nginx).
  std::string_view allowed = AllowedMethods(path);
  if (!allowed.empty() || (!get && req.method() != http::verb::post)) {
    if (allowed.empty()) allowed = "GET, POST";
    Headers allow;
    allow.emplace_back("Allow", std::string(allowed));
    co_return co_await Send(client, req, http::status::method_not_allowed,
                            ErrorBodyForPath(path, 405, std::string(req.method_string()) + " is not served for " +
                                                            std::string(path) + " (allowed: " + std::string(allowed) + ")")
                                .dump(),
                            "application/json", std::move(allow));
  }
  co_return co_await Send(client, req, http::status::not_found,
                          OpenAIErrorBody(404, "no route for " + std::string(req.method_string()) + " " +
                                                   std::string(path))
                              .dump());
}

Task<bool> Server::HandleModels(tcp::socket& client, Request& req) {
  if (replay_ || upstreams_.empty()) {
    co_return co_await Send(client, req, http::status::ok,
                            ModelList(replay_ ? replay_->models() : std::vector<std::string>()));
  }
  // Relay the first healthy upstream's list.
  Upstream* up = upstreams_.Pick("", {});
  beast::error_code ec;
  bool reused = false;
  auto conn = co_await upstreams_.Connect(*up, ec, reused);
  http::response_parser<http::string_body> answer;
  if (!ec) {
    RequestHead get(up->base_path + "/v1/models", "GET");
    get.Set("Host", up->host + ":" + up->port);
    if (!upstreams_.api_key().empty()) get.Set("Authorization", "Bearer " + upstreams_.api_key());
    get.Set("Connection", "close");
    std::string head = std::move(get).Text(0);
    conn->stream.set_timeout(30);
    co_await WriteMessage(conn->stream, head, BodyPieces(), ec);
    if (!ec) co_await ReadHttp(conn->stream, conn->buffer, answer, ReadUntil::kMessage, ec);
  }
  if (ec) {
    metrics_.upstream_errors.fetch_add(1);
    co_return co_await Send(client, req, http::status::bad_gateway,
                            OpenAIErrorBody(502, "the upstream: " + ec.message()).dump());
  }
  co_return co_await Send(client, req, answer.get().result(), std::move(answer.get().body()));
}

Task<bool> Server::HandleAdmin(tcp::socket& client, Request& req, std::string_view path,
                               std::string_view query) {
  bool allowed;
  if (!config_.admin_token.empty()) {
    allowed = req[http::field::authorization] == "Bearer " + config_.admin_token;
  } else {
    beast::error_code ec;
    auto remote = client.remote_endpoint(ec);
    allowed = !ec && remote.address().is_loopback();
  }
  if (!allowed) {
    co_return co_await Send(client, req, http::status::forbidden,
                            OpenAIErrorBody(403, "admin API: loopback only, or --admin-token").dump());
  }
  auto state = [&] {
    return Json{{"paused", admission_.paused()},
                {"mode", admission_.pause_rejects() ? "reject" : "wait"},
                {"in_flight", metrics_.in_flight.load()},
                {"policy_version", admission_.policy_version()},
                {"draining", stopping_.load()}};
  };
  bool post = req.method() == http::verb::post;
  if (path == "/admin/state") co_return co_await Send(client, req, http::status::ok, state().dump());
  if (post && path == "/admin/pause") {
    admission_.Pause(QueryParam(query, "mode") == "reject");
    co_return co_await Send(client, req, http::status::ok, state().dump());
  }
  if (post && path == "/admin/resume") {
    admission_.Resume();
    co_return co_await Send(client, req, http::status::ok, state().dump());
  }
  if (post && path == "/admin/drain") {
    // Waits until no call is in flight and the database holds every call
    // (pause first, or new calls keep arriving).
    double deadline = MonotonicSeconds() + 600;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while ((metrics_.in_flight.load() > 0 || recorder_->pending() > 0) && MonotonicSeconds() < deadline) {
      timer.expires_after(std::chrono::milliseconds(10));
      beast::error_code ec;
      co_await timer.async_wait(Into(ec));
    }
    co_return co_await Send(client, req, http::status::ok, state().dump());
  }
  if (post && path == "/admin/policy-version") {
    std::string value = QueryParam(query, "version");
    if (value.empty()) {
      Json body = Json::parse(req.body(), nullptr, false);
      if (body.is_object() && body.contains("version") && body["version"].is_number_integer()) {
        value = std::to_string(body["version"].get<int64_t>());
      }
    }
    char* end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') {
      co_return co_await Send(client, req, http::status::bad_request,
                              OpenAIErrorBody(400, "policy-version: give ?version=N or {\"version\": N}").dump());
    }
    admission_.set_policy_version(v);
    if (Status s = reader_store_.meta().Set(std::string(kPolicyVersionKey), std::to_string(v)); !s.ok()) {
      config_.env->Warn("cannot persist the policy version: " + s.message());
    }
    co_return co_await Send(client, req, http::status::ok, state().dump());
  }
  co_return co_await Send(client, req, http::status::not_found,
                          OpenAIErrorBody(404, "admin: unknown endpoint " + std::string(path)).dump());
}

}  // namespace forge::proxy
