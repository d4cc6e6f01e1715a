// The proxy's HTTP server: one acceptor, one io_context per io thread, and
// one coroutine per connection (no thread per connection). Connections are
// dealt round-robin to the contexts and stay on theirs, so a connection's
// work never hops between threads (as it would with threads sharing one
// context).
// server.cpp holds the connection loop, the proxy's own endpoints and the
// admin API; call.cpp the model-call path's driver and its first stages
// (attribution, decoding), call_relay.cpp its answer (relay, capture,
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
#include "proxy/upstream_faults.h"
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
  // Set by Server::OpenExchange once an upstream answered: the answer being
  // read counts against it.
  std::optional<OutstandingCall> outstanding;
  // What a call that got no answer is recorded with.
  int FailureStatus() const { return client_gone ? kClientHungUpStatus : timed_out ? 504 : 502; }
  // Ready for another attempt (the client kept).
  void Reset() {
    outstanding.reset();
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

// "upstream answered <status>: <the error's message>", from an error answer's body.
std::string UpstreamErrorMessage(int status, const std::string& body);

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

// A model call on its way through the stages, and a streamed answer being
// relayed (call.h).
struct Call;
struct Refusal;
struct StreamRelay;
struct AnthropicRelay;
struct ClientStream;

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

  // call.cpp: a model call, as the stages below in their order.
  Task<bool> HandleCall(tcp::socket& client, Request& req, const Route& route,
                        std::string path_rollout, ArrivingBody* arriving);
  // Who calls: the rollout a secret (the path's, then the header's) belongs to.
  std::optional<Refusal> Attribute(Call& call, const std::string& path_rollout);
  // What is asked: the body read as bytes (the upstream's own formats) or
  // parsed and translated to a chat request by the client's format.
  std::optional<Refusal> Decode(Call& call);
  // Decode for a pass-through body still arriving: it goes upstream as it
  // comes, read and checked on the way (cut_through.cpp). Set: the call is
  // over, with what HandleCall returns.
  Task<std::optional<bool>> ForwardWhileArriving(Call& call, ArrivingBody& arriving);
  // Whether the call may go on now: --max-per-rollout, and a pause that
  // refuses calls (--pause rejecting).
  std::optional<Refusal> Admit(Call& call);
  std::optional<Refusal> AdmitPerRollout(Call& call);
  // A pause for a weight update waited out; false: the client gave up meanwhile.
  Task<bool> WaitOutPause(Call& call);
  void StartRecord(Call& call);
  // The upstream request: the client's, plus the capture fields.
  void PrepareUpstreamRequest(Call& call);
  RequestHead UpstreamHead(const Call& call, const Upstream& upstream) const;
  void StartKeepAlive(Call& call, const net::any_io_executor& executor);
  // Refuses a call before it went upstream, in its format's error shape.
  Task<bool> Reject(Call& call, int status, const std::string& message, Headers headers = Headers());
  Task<bool> Reject(Call& call, Refusal& refusal);
  // Ends a call with an error: a JSON error if nothing was streamed yet
  // (with the upstream's retry headers, if it sent any), else a well-formed
  // error event; the call is recorded as failed.
  Task<bool> FailCall(Call& call, int status, std::string message, Headers headers = Headers());
  void EndRecord(store::CallRecord& rec, double t0);

  // To an Anthropic-format upstream: Messages only, passed through (HandleAnthropicUpstream).
  Task<bool> PassToAnthropic(Call& call);

  // call_relay.cpp: the answer, relayed to the client and committed.
  Task<bool> AnswerFromRecording(Call& call);  // --replay
  Task<bool> Relay(Call& call);
  Task<bool> RelayWhole(Call& call);
  Task<bool> RelayWholeBytes(Call& call, std::string& text);
  Task<bool> RelayWholeTranslated(Call& call, std::string& text);
  Task<bool> CommitWhole(Call& call, std::string& bytes, const Json* chat_response);
  Task<bool> RelayStream(Call& call);
  Task<bool> CommitStream(Call& call, StreamRelay& stream);
  Task<bool> EndFailedStream(Call& call, StreamRelay& stream);

  // request: the call's request text already in the call log (LogRequestText).
  // call is taken (moved into the writer's queue) before the first suspension:
  // its owner co_awaits this at once, so a reference does.
  Task<Status> Commit(store::CallRecord&& call, std::optional<LoggedRequest> request = std::nullopt);
  // anthropic_upstream.cpp: /v1/messages passed through to an Anthropic-format upstream.
  Task<bool> HandleAnthropicUpstream(Call& call);
  Task<bool> FailAnthropicCall(Call& call, int status, std::string message);
  Task<bool> RelayAnthropicWhole(Call& call, std::string& content_type);
  Task<bool> RelayAnthropicStream(Call& call);
  Task<bool> CommitAnthropicStream(Call& call, ClientStream& cs, AnthropicRelay& stream);

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
  // The one way a call opens its upstream exchange (the translated and
  // pass-through path's, and the Anthropic upstream's): ExchangeWithUpstream,
  // and up to `retries` times again after a failure or a retryable error
  // answer (429/502/503), each failed attempt committed as a call of its own
  // (from rec). True: exchange holds an answer's head, its body (an error's
  // too) still to read, its upstream named in rec and counted outstanding.
  // False: the call is to fail with exchange.FailureStatus() and exchange.error.
  Task<bool> OpenExchange(UpstreamExchange& exchange, store::CallRecord& rec, double t0,
                          const std::function<RequestHead(const Upstream&)>& make_request, BodyPieces body,
                          const std::function<void()>& after_send = nullptr, CutThrough* sent = nullptr,
                          int retries = 0);
  // An answer's whole body into out (see AppendWholeUpstreamBody), the
  // connection given back when it may serve again. False: the call is to fail
  // with exchange.FailureStatus() and exchange.error (the client hung up, or
  // the upstream stalled or broke off).
  Task<bool> ReadWholeAnswer(UpstreamExchange& exchange, std::string& out);
  // A failed attempt that OpenExchange tries again (answer: its error
  // answer's head, or null): recorded, then waited out.
  Task<void> RecordRetry(const UpstreamExchange& exchange, const http::fields* answer, int status,
                         const store::CallRecord& rec, double t0, int attempt, int retries,
                         const std::string& failure);

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
