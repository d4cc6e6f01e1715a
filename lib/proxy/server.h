// The proxy's HTTP server: one acceptor, one io_context per io thread, and
// one coroutine per connection (no thread per connection). Connections are
// dealt round-robin to the contexts and stay on theirs, so a connection's
// work never hops between threads (as it would with threads sharing one
// context).
// server.cpp holds the connection loop, the proxy's own endpoints and the
// admin API; call.cpp the model-call path (attribution, upstream, capture,
// recording, streaming).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "proxy/auth.h"
#include "proxy/client_format.h"
#include "proxy/format_registry.h"
#include "proxy/http_write.h"
#include "proxy/metrics.h"
#include "proxy/net.h"
#include "proxy/pass_through.h"
#include "proxy/proxy.h"
#include "proxy/recorder.h"
#include "proxy/replay.h"
#include "proxy/retry_keys.h"
#include "proxy/upstream.h"
#include "store/store.h"

namespace forge::proxy {

using Request = http::request<http::string_body>;

// What a call whose client hung up before its answer was done is recorded
// with (nginx's status for it); nothing is sent.
constexpr int kClientHungUpStatus = 499;
constexpr const char* kClientHungUpMessage = "the client hung up before the answer was done";

// An upstream that answered a call with its status line and headers (the
// body still to read through parser); or, without conn, why none did.
struct UpstreamExchange {
  // In: the client the answer is for. Its hanging up ends the wait for the
  // answer (and, through the connection, every later read of it).
  const tcp::socket* client = nullptr;
  std::unique_ptr<UpstreamConn> conn;
  Upstream* upstream = nullptr;  // the last one tried
  std::optional<http::response_parser<http::buffer_body>> parser;
  std::string error;
  bool timed_out = false;    // the upstream went silent: a 504, and never sent twice
  bool client_gone = false;  // the client hung up first: a 499, and the upstream is not to blame
  // Ready for another attempt (the client kept).
  void Reset() {
    parser.reset();
    conn.reset();
    upstream = nullptr;
    error.clear();
    timed_out = client_gone = false;
  }
};

// Appends the rest of an exchange's body to out: what came in with the header
// (often the whole body), then what the upstream sends, read into out's own
// space (sized by the body's length when the upstream sent one), so no buffer
// is allocated and cleared for each call.
Task<beast::error_code> AppendWholeUpstreamBody(UpstreamExchange& exchange, std::string& out);

// A request body the proxy starts to forward before it has all of it (a
// harness's large chat request: cut_through.cpp). req.body() has the whole
// length from the start; the first `have` bytes are read.
struct ArrivingBody {
  std::function<Task<size_t>(net::mutable_buffer, beast::error_code&)> read_some;  // from the client
  size_t have = 0;
};
// Reads the rest of an arriving body into body (the request's);
// partial_message when the client closed first.
Task<void> ReadRestOfBody(ArrivingBody& arriving, std::string& body, beast::error_code& ec);

// How a call that forwards its body as it arrives got on (Server::CutThrough).
struct CutThrough {
  enum class Outcome {
    kSent,         // the whole request went to conn; read its answer
    kFallback,     // the body is read but went nowhere whole: send it as any call is sent
    kBadRequest,   // the body is not a request (error says why); nothing reached the upstream whole
    kClientGone,   // the client broke off its body
  };
  Outcome outcome = Outcome::kFallback;
  Upstream* upstream = nullptr;
  std::unique_ptr<UpstreamConn> conn;
  bool reused = false;  // conn was a kept-alive connection
  std::string error;
};

class Server {
 public:
  // contexts[0] also runs the acceptor and the housekeeping coroutines.
  Server(const ProxyConfig& config, std::vector<net::io_context*> contexts, store::Store& writer_store,
         store::Store& reader_store, UpstreamPool& upstreams, ReplayIndex* replay);

  // Creates the store's call log and the listening socket.
  Status Open();
  void Start();             // spawns the accept loop, the stop watcher and health checks
  void Finish();            // after io threads return: stops the recorder
  Metrics& metrics() { return metrics_; }

 private:
  Task<void> AcceptLoop();
  void StartSession(tcp::socket socket);
  Task<void> WatchStop();
  Task<void> SweepWaits();
  Task<void> Session(tcp::socket socket);
  // Answers one request; false when the connection must close. arriving:
  // its body is still being read (only a call may start before it is all there).
  Task<bool> Handle(tcp::socket& client, Request& req, ArrivingBody* arriving);
  Task<bool> HandleAdmin(tcp::socket& client, Request& req, std::string_view path,
                         std::string_view query);
  Task<bool> HandleModels(tcp::socket& client, Request& req);

  // call.cpp
  Task<bool> HandleCall(tcp::socket& client, Request& req, const Route& route,
                        std::string path_rollout, ArrivingBody* arriving);
  // request: the call's request text already in the call log (LogRequestText).
  // call is taken (moved into the writer's queue) before the first suspension:
  // its owner co_awaits this at once, so a reference does.
  Task<Status> Commit(store::CallRecord&& call, std::optional<LoggedRequest> request = std::nullopt);
  // anthropic_upstream.cpp: /v1/messages passed through to an Anthropic-format upstream.
  // Arguments by reference (they live in HandleCall's frame): g++12 double-frees
  // non-trivial by-value coroutine parameters passed this way.
  Task<bool> HandleAnthropicUpstream(tcp::socket& client, Request& req, const ClientFormat& format,
                                     bool streaming, Json& client_request, store::CallRecord& rec,
                                     const std::string& retry_key, double t0);

  // upstream_exchange.cpp: sends make_request(upstream) and body to one upstream after
  // another (rollout-affine first) until one answers with headers, into out;
  // after_send runs once a request is sent, while the upstream works
  // (a beast parser cannot be moved, so it is not returned). A refused
  // or broken connection marks that upstream unhealthy and moves on; a
  // kept-alive connection the upstream had closed is retried, not blamed; a
  // timeout ends the attempts, since the generation may be running.
  // sent: a request CutThrough already sent whole; its answer is read first.
  Task<void> ExchangeWithUpstream(const std::string& rollout, UpstreamExchange& out,
                                  const std::function<RequestHead(const Upstream&)>& make_request,
                                  BodyPieces body, const std::function<void()>& after_send = nullptr,
                                  CutThrough* sent = nullptr);

  // cut_through.cpp: a pass-through call's large body goes upstream as it
  // arrives, the capture fields after its last byte; the body is read
  // whole and checked before its end is sent. raw: the request as read.
  Task<void> ForwardArrivingBody(const std::string& rollout, Request& req, ArrivingBody& arriving,
                                 const std::function<RequestHead(const Upstream&)>& make_request, bool completions,
                                 std::optional<PassThroughRequest>& raw, CutThrough& out,
                                 const std::function<void()>& after_send);

  // Whether a call answered 200 came without token ids (an upstream that
  // ignores return_token_ids): counted, warned of once, and true (fail it)
  // with --require-token-ids.
  bool LacksTokenIds(const store::CallRecord& call);

  Task<bool> Send(tcp::socket& client, Request& req, http::status status, std::string body,
                  std::string_view content_type = "application/json",
                  std::vector<std::pair<std::string, std::string>> headers = {});

  const ProxyConfig& config_;
  std::vector<net::io_context*> contexts_;
  net::io_context& io_;  // contexts_[0]
  size_t next_context_ = 0;
  store::Store& reader_store_;
  UpstreamPool& upstreams_;
  ReplayIndex* replay_;
  Metrics metrics_;
  store::Store& writer_store_;
  std::unique_ptr<Recorder> recorder_;  // made by Open
  SecretResolver secrets_;
  RetryKeys retry_keys_;
  tcp::acceptor acceptor_;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> warned_no_token_ids_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> pause_rejects_{false};
  std::atomic<int64_t> policy_version_{0};
  std::mutex rollout_mutex_;
  std::map<std::string, int> rollout_in_flight_;
};

// Seconds on a monotonic clock, for latencies.
double MonotonicSeconds();

}  // namespace forge::proxy
