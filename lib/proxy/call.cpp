// The model-call path: attribute the call to a rollout, decode what it asks
// (translated to the upstream's form, or read as bytes), open the upstream
// exchange (asking for token ids and logprobs), relay the answer (streamed
// event by event, or whole; call_relay.cpp), and commit the call to the store
// before the response's final bytes go out. HandleCall reads as that list;
// each stage is a function of its own, sharing the call's state (call.h).
#include "proxy/call.h"

#include <chrono>

#include <fmt/format.h>

#include "base/json_dump.h"
#include "base/json_field.h"
#include "base/json_parse.h"
#include "proxy/http_read.h"
#include "proxy/pass_through.h"
#include "proxy/ready_io.h"
#include "proxy/request_limits.h"

namespace forge::proxy {
namespace {

// Counts a call in flight overall, and per rollout (null: no --max-per-rollout
// to enforce, so no count to keep) for its whole life.
class InFlight {
 public:
  InFlight(Metrics& metrics, std::mutex& mutex, std::map<std::string, int>* per_rollout, const std::string& rollout)
      : metrics_(metrics), mutex_(mutex), per_rollout_(per_rollout) {
    metrics_.in_flight.fetch_add(1);
    if (!per_rollout_) return;
    rollout_ = rollout;
    std::lock_guard<std::mutex> lock(mutex_);
    ++(*per_rollout_)[rollout_];
  }
  ~InFlight() {
    metrics_.in_flight.fetch_sub(1);
    if (!per_rollout_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (--(*per_rollout_)[rollout_] == 0) per_rollout_->erase(rollout_);
  }

 private:
  Metrics& metrics_;
  std::mutex& mutex_;
  std::map<std::string, int>* per_rollout_;
  std::string rollout_;
};

Task<void> WaitWhile(const bool& flag) {
  net::steady_timer timer(co_await net::this_coro::executor);
  while (flag) {
    timer.expires_after(std::chrono::milliseconds(1));
    beast::error_code ec;
    co_await timer.async_wait(Into(ec));
  }
}

Task<void> KeepAlive(std::shared_ptr<ClientStream> cs, double interval) {
  cs->keepalive_running = true;
  while (!cs->call_started_writing && !cs->failed) {
    cs->keepalive_timer->expires_after(std::chrono::milliseconds(static_cast<int64_t>(interval * 1000)));
    beast::error_code ec;
    co_await cs->keepalive_timer->async_wait(Into(ec));
    if (cs->call_started_writing || cs->failed) break;
    co_await WriteSseBytes(*cs, ": keepalive\n\n", false);
  }
  cs->keepalive_running = false;
}

}  // namespace

Task<void> StopKeepAlive(ClientStream& cs) {
  cs.call_started_writing = true;
  if (cs.keepalive_timer) cs.keepalive_timer->cancel();
  co_await WaitWhile(cs.writing);
  co_await WaitWhile(cs.keepalive_running);
}

Task<bool> Server::HandleCall(tcp::socket& client, Request& req, const Route& route,
                              std::string path_rollout, ArrivingBody* arriving) {
  Call call(client, req, route);  // the URL read: the format that serves the call
  if (stopping_.load()) co_return co_await Reject(call, 503, "forge-proxy is shutting down");
  std::optional<Refusal> refused = Attribute(call, path_rollout);
  if (refused) co_return co_await Reject(call, *refused);

  // Decode, and admit.
  call.pass_through = route.passes_through();
  // A large body still arriving goes upstream as it comes (cut_through.cpp),
  // read and checked there; any other call reads it whole first.
  call.cut_through = arriving && call.pass_through && !replay_ && config_.upstream_api != "anthropic";
  if (arriving && !call.cut_through) {
    beast::error_code ec;
    co_await ReadRestOfBody(*arriving, req.body(), ec);
    if (ec) co_return false;
  }
  if ((refused = Decode(call)) || (refused = Admit(call))) co_return co_await Reject(call, *refused);
  if (paused_.load()) {
    bool waited = co_await WaitOutPause(call);
    if (!waited) co_return false;
  }
  if (call.cut_through) {
    std::optional<bool> ended = co_await ForwardWhileArriving(call, *arriving);
    if (ended) co_return *ended;
  }

  // Exchange: the call counts as in flight and has its record from here.
  InFlight in_flight(metrics_, rollout_mutex_, config_.max_per_rollout > 0 ? &rollout_in_flight_ : nullptr,
                     call.rollout);
  metrics_.calls.fetch_add(1);
  StartRecord(call);
  if (replay_) co_return co_await AnswerFromRecording(call);
  if (config_.upstream_api == "anthropic") co_return co_await PassToAnthropic(call);
  PrepareUpstreamRequest(call);
  StartKeepAlive(call, co_await net::this_coro::executor);
  call.exchange.client = &client;
  bool answered = co_await OpenExchange(
      call.exchange, call.rec, call.t0, [this, &call](const Upstream& u) { return UpstreamHead(call, u); },
      call.upstream_body,
      [this, &call] {
        if (!call.logged_request && !call.rec.request_text.empty()) {
          call.logged_request = recorder_->LogRequestText(call.rec.request_text, call.rec.rollout_id);
        }
      },
      &call.forwarded, config_.upstream_retries);
  if (!answered) co_return co_await FailCall(call, call.exchange.FailureStatus(), call.exchange.error);
  co_return co_await Relay(call);  // and commit
}

Task<std::optional<bool>> Server::ForwardWhileArriving(Call& call, ArrivingBody& arriving) {
  co_await ForwardArrivingBody(
      call.rollout, call.req, arriving, [this, &call](const Upstream& u) { return UpstreamHead(call, u); },
      call.route.format == "openai-completions", call.raw, call.forwarded,
      [this, &call] { call.logged_request = recorder_->LogRequestText(call.req.body(), call.rollout); });
  if (call.forwarded.outcome == CutThrough::Outcome::kClientGone) co_return false;
  if (call.forwarded.outcome == CutThrough::Outcome::kBadRequest) {
    co_return co_await Reject(call, 400, call.forwarded.error);
  }
  call.chat.stream = call.raw->stream;
  call.chat.side_call = call.raw->side_call;
  co_return std::nullopt;
}

// An Anthropic-format upstream (a teacher API): Messages pass through untranslated.
Task<bool> Server::PassToAnthropic(Call& call) {
  if (call.format->name() != "anthropic" && call.format->name() != "anthropic-count-tokens") {
    return Reject(call, 400, "this proxy's upstream speaks Anthropic Messages (--upstream-api anthropic); "
                             "only /v1/messages and /v1/messages/count_tokens are served");
  }
  return HandleAnthropicUpstream(call);
}

std::optional<Refusal> Server::Attribute(Call& call, const std::string& path_rollout) {
  std::string secret;
  auto auth_header = call.req[http::field::authorization];
  std::string_view auth(auth_header.data(), auth_header.size());
  if (auth.rfind("Bearer ", 0) == 0) secret = std::string(auth.substr(7));
  if (secret.empty()) secret = std::string(call.req["x-api-key"]);
  if (secret.empty()) secret = std::string(call.req["x-goog-api-key"]);
  std::string& rollout = call.rollout;
  std::optional<SecretOwner> ended;  // a secret whose rollout is over: refused, and said so
  auto owner_of = [&](const std::string& candidate) -> Result<std::string> {
    auto resolved = secrets_.Resolve(candidate);
    if (!resolved.ok()) return resolved.status();
    if (!resolved->has_value()) return std::string();
    if (!(*resolved)->ended.empty()) {
      ended = **resolved;
      return std::string();
    }
    return (*resolved)->rollout;
  };
  // The path's secret first, then the header's. (Pointers: copies of the
  // strings would cost two allocations a call.)
  const std::string* candidates[] = {&path_rollout, &secret};
  for (const std::string* candidate_text : candidates) {
    const std::string& candidate = *candidate_text;
    if (candidate.empty() || !rollout.empty()) continue;
    auto owner = owner_of(candidate);
    if (!owner.ok()) return Refusal{503, "store unavailable: " + owner.status().message(), {}};
    rollout = std::move(*owner);
  }
  if (rollout.empty() && !path_rollout.empty()) {
    // /r/<rollout-id>/ with the rollout's secret as the key, or any id in --open mode.
    auto by_secret = owner_of(secret);
    if (config_.open || (by_secret.ok() && *by_secret == path_rollout)) rollout = path_rollout;
  }
  if (rollout.empty() && ended) {
    return Refusal{401, fmt::format("rollout {} has {}: its secret is no longer accepted", ended->rollout,
                                    ended->ended == "finished" ? "finished" : "been cancelled"), {}};
  }
  if (rollout.empty() && config_.open) rollout = "anonymous";
  if (rollout.empty()) {
    return Refusal{401, secret.empty() && path_rollout.empty()
                            ? "no API key: send the rollout's secret as the bearer token or x-api-key"
                            : "unknown rollout secret", {}};
  }
  return std::nullopt;
}

std::optional<Refusal> Server::Decode(Call& call) {
  if (call.cut_through) return std::nullopt;  // read as its bytes go upstream
  const std::string& body = call.req.body();
  if (call.pass_through && !replay_) {
    auto read = ReadPassThroughRequest(body, call.route.format == "openai-completions", config_.max_json_depth);
    if (!read.ok()) return Refusal{400, read.status().message(), {}};
    call.raw = std::move(*read);
    call.chat.stream = call.raw->stream;
    call.chat.side_call = call.raw->side_call;
    return std::nullopt;
  }
  // (ParseJson, not nlohmann's parser: a 200 KB conversation in ~0.1 ms, not ~2.)
  std::string parse_error;
  // Nesting is bounded here, so the translations, which recurse, never meet
  // a document deeper than --max-json-depth.
  if (std::optional<Json> parsed = ParseJson(body, &parse_error, config_.max_json_depth)) {
    call.client_request = std::move(*parsed);
  } else {
    parse_error = RequestJsonError(parse_error);
  }
  if (!parse_error.empty()) return Refusal{400, std::move(parse_error), {}};
  if (!call.url.status.ok()) return Refusal{404, call.url.status.message(), {}};
  // The document itself, not a copy (a 200 KB conversation), unless fields
  // from the URL join it (Gemini's model and method).
  const Json* translated_input = &call.client_request;
  Json with_url_fields;
  if (call.url.fields.is_object() && call.client_request.is_object()) {
    with_url_fields = call.client_request;
    with_url_fields.update(call.url.fields);
    translated_input = &with_url_fields;
  }
  auto translated = call.format->ToChat(*translated_input);
  if (!translated.ok()) return Refusal{400, translated.status().message(), {}};
  call.chat = std::move(*translated);
  // Chat and completions requests go as bytes and keep their max_tokens.
  CapMaxTokens(call.chat.body, config_.max_tokens_cap);
  return std::nullopt;
}

std::optional<Refusal> Server::AdmitPerRollout(Call& call) {
  if (config_.max_per_rollout <= 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(rollout_mutex_);
  auto it = rollout_in_flight_.find(call.rollout);
  if (it == rollout_in_flight_.end() || it->second < config_.max_per_rollout) return std::nullopt;
  Refusal refusal{429, "rollout " + call.rollout + " already has " + std::to_string(it->second) +
                           " calls in flight (--max-per-rollout)", {}};
  refusal.headers.emplace_back("Retry-After", "1");
  return refusal;
}

std::optional<Refusal> Server::Admit(Call& call) {
  if (std::optional<Refusal> refused = AdmitPerRollout(call)) return refused;
  // Paused for a weight update: tell the client to come back (or wait, WaitOutPause).
  if (!paused_.load() || !pause_rejects_.load()) return std::nullopt;
  Refusal refusal{429, "paused for a policy update; retry shortly", {}};
  refusal.headers.emplace_back("Retry-After", "2");
  refusal.headers.emplace_back("X-Forge-Paused", "1");
  return refusal;
}

Task<bool> Server::WaitOutPause(Call& call) {
  net::steady_timer timer(co_await net::this_coro::executor);
  for (int waits = 1; paused_.load() && !stopping_.load(); ++waits) {
    timer.expires_after(std::chrono::milliseconds(20));
    beast::error_code ec;
    co_await timer.async_wait(Into(ec));
    // A client that gave up meanwhile would be sent upstream on resume, for no one.
    if (waits % 10 == 0 && HasHungUp(call.client)) co_return false;
  }
  co_return true;
}

void Server::StartRecord(Call& call) {
  store::CallRecord& rec = call.rec;
  rec.rollout_id = call.rollout;
  rec.started_at = NowSeconds();
  rec.client_format = call.format->name();
  rec.side_call = call.chat.side_call;
  rec.policy_version_start = policy_version_.load();
  // Only SDKs that mark their retries get retry keys (and pay for hashing the body).
  if (auto h = call.req["x-stainless-retry-count"]; !h.empty()) {
    call.retry_key = retry_keys_.KeyFor(call.rollout, call.req.body(), std::atoi(std::string(h).c_str()));
  }
}

void Server::PrepareUpstreamRequest(Call& call) {
  store::CallRecord& rec = call.rec;
  if (call.raw) {
    PassThroughRequest& raw = *call.raw;
    call.wants = raw.wants;
    call.client_wants_usage = raw.client_wants_usage;
    rec.model = std::move(raw.model);
    // The store keeps the request as its bytes and the upstream request as
    // the few fields that differ. (req is only read for its headers from here.)
    rec.upstream_request_patch_text = std::move(raw.upstream_patch);
    rec.request_text = std::move(call.req.body());
    call.upstream_body = {std::string_view(rec.request_text).substr(raw.kept_from, raw.kept), raw.added};
    return;
  }
  Json body = std::move(call.chat.body);
  call.wants = AddCaptureFields(body, call.route.format == "openai-completions");
  if (call.chat.stream) {
    body["stream"] = true;
    // Usage for the record; stripped from what the client gets when it did
    // not ask (chat clients; the other formats always carry usage in their
    // own end events).
    if (!body.contains("stream_options")) body["stream_options"] = {{"include_usage", true}};
  }
  rec.model = JsonText(body, "model");
  // Its text is both what goes upstream and the record's (the store's
  // writer slices it into parts as it does a request's bytes).
  rec.upstream_request_text = DumpJson(body);
  call.upstream_body = rec.upstream_request_text;
  // The request as the harness sent it: its bytes, which go into the call
  // log while the upstream works (as a pass-through call's do), so the
  // call's own record, written before its last bytes, does not carry them.
  rec.request_text = std::move(call.req.body());
}

RequestHead Server::UpstreamHead(const Call& call, const Upstream& u) const {
  RequestHead up(u.base_path + std::string(call.route.upstream_path));
  up.Set("Host", u.host + ":" + u.port);
  up.Set("Content-Type", "application/json");
  // (A body forwarded as it arrives is sent before it says whether it streams.)
  up.Set("Accept", call.cut_through ? "application/json, text/event-stream"
                   : call.chat.stream ? "text/event-stream" : "application/json");
  if (!upstreams_.api_key().empty()) up.Set("Authorization", "Bearer " + upstreams_.api_key());
  return up;
}

void Server::StartKeepAlive(Call& call, const net::any_io_executor& executor) {
  auto cs = std::make_shared<ClientStream>();
  cs->socket = &call.client;
  cs->version = call.req.version();
  cs->content_type = call.url.stream_content_type;
  // Not for a format whose clients take a comment for a broken stream (Gemini's: ClientUrl).
  if (call.chat.stream && config_.keepalive_interval > 0 && cs->content_type == "text/event-stream" &&
      call.url.keepalive_comments) {
    cs->keepalive_timer = std::make_unique<net::steady_timer>(executor);
    net::co_spawn(executor, KeepAlive(cs, config_.keepalive_interval), net::detached);
  }
  call.cs = std::move(cs);
}

Task<bool> Server::Reject(Call& call, int status, const std::string& message, Headers headers) {
  if (status < 500) metrics_.client_errors.fetch_add(1);
  // Upstream addresses stay in the log and the store.
  return Send(call.client, call.req, static_cast<http::status>(status),
              call.format->ErrorBody(status, WithoutAddresses(message, config_.upstreams)).dump(), "application/json",
              std::move(headers));
}

Task<bool> Server::Reject(Call& call, Refusal& refusal) {
  return Reject(call, refusal.status, refusal.message, std::move(refusal.headers));
}

Task<bool> Server::FailCall(Call& call, int status, std::string message, Headers headers) {
  metrics_.upstream_errors.fetch_add(status >= 500 ? 1 : 0);
  call.rec.http_status = status;
  call.rec.error = message;
  call.rec.retry_key.clear();  // a failed call never hides a retry that succeeds
  EndRecord(call.rec, call.t0);
  co_await Commit(std::move(call.rec), call.logged_request);  // best effort: the client is told either way
  co_await StopKeepAlive(*call.cs);
  if (status == kClientHungUpStatus) co_return false;  // no one to tell
  if (!call.cs->headers_sent) co_return co_await Reject(call, status, message, std::move(headers));
  auto translator = call.format->NewStream();
  co_await WriteSseBytes(*call.cs, translator->OnError(WithoutAddresses(message, config_.upstreams)), true);
  co_return false;
}

void Server::EndRecord(store::CallRecord& rec, double t0) {
  rec.ended_at = NowSeconds();
  rec.policy_version_end = policy_version_.load();
  metrics_.ObserveLatency(MonotonicSeconds() - t0);
}

bool Server::LacksTokenIds(const store::CallRecord& call) {
  if (!call.prompt_ids.empty() || !call.completion_ids.empty()) return false;
  metrics_.calls_without_token_ids.fetch_add(1, std::memory_order_relaxed);
  if (!warned_no_token_ids_.exchange(true)) {
    config_.env->Warn(fmt::format("upstream {} answered a call of rollout {} without token ids: it ignores return_token_ids, so "
                                  "its calls are useless for RL training ({}; counted in "
                                  "forge_proxy_calls_without_token_ids_total; warned once)",
                                  call.upstream, call.rollout_id,
                                  config_.require_token_ids ? "--require-token-ids fails them"
                                                            : "recorded anyway; --require-token-ids fails them"));
  }
  return config_.require_token_ids;
}

Task<Status> Server::Commit(store::CallRecord&& call, std::optional<LoggedRequest> request) {
  if (call.http_status == kClientHungUpStatus) metrics_.client_hangups.fetch_add(1, std::memory_order_relaxed);
  // The writer's answer arrives by a post to this call's io thread, so it
  // never races with the wait below.
  struct Waiting {
    std::optional<Status> result;
    std::optional<net::steady_timer> timer;
  };
  auto executor = co_await net::this_coro::executor;
  std::shared_ptr<Waiting> waiting;
  auto logged = recorder_->Submit(std::move(call), [&] {
    waiting = std::make_shared<Waiting>();
    return Recorder::Done([waiting, executor](Status status) {
      net::post(executor, [waiting, status] {
        waiting->result = status;
        if (waiting->timer) waiting->timer->cancel();
      });
    });
  }, request);
  if (logged) co_return *logged;  // the usual case: final at once
  waiting->timer.emplace(executor, net::steady_timer::time_point::max());
  while (!waiting->result) {
    beast::error_code ec;
    co_await waiting->timer->async_wait(Into(ec));
  }
  co_return *waiting->result;
}

}  // namespace forge::proxy
