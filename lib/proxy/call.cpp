// The model-call path: attribute the call to a rollout, translate it to the
// upstream's form, ask for token ids and logprobs, relay the answer (streamed
// event by event, or whole), strip what the client did not ask for, and
// commit the call to the store before the response's final bytes go out.
#include <array>
#include <chrono>
#include <cstdio>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "base/hash.h"
#include "base/json_field.h"
#include "base/json_dump.h"
#include "base/json_parse.h"
#include "cli/diagnostics.h"
#include "proxy/chat_assembler.h"
#include "proxy/client_stream.h"
#include "proxy/formats/gemini.h"
#include "proxy/http_read.h"
#include "proxy/http_write.h"
#include "proxy/pass_through.h"
#include "proxy/request_limits.h"
#include "proxy/server.h"
#include "proxy/sse.h"
#include "proxy/stream_relay.h"
#include "proxy/token_capture.h"
#include "proxy/upstream_faults.h"

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

// The call writes from here on; waits out a keepalive write in progress.
Task<void> TakeOver(ClientStream& cs) {
  cs.call_started_writing = true;
  if (cs.keepalive_timer) cs.keepalive_timer->cancel();
  co_await WaitWhile(cs.writing);
}

// A chunk after which the client may consider the response complete: it holds
// a finish reason, or is the trailing usage chunk.
bool IsFinalChunk(const Json& chunk) {
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return true;
  for (const auto& c : *choices) {
    if (c.contains("finish_reason") && !c["finish_reason"].is_null()) return true;
  }
  return false;
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

constexpr const char* kNoTokenIdsMessage =
    "the upstream answered without token ids (it ignores return_token_ids; vLLM sends them from 0.10.2) and "
    "--require-token-ids is set";

std::string FinishReasonOf(const Json& response) {
  if (!response.is_object() || !response.contains("choices") || !response["choices"].is_array() ||
      response["choices"].empty()) {
    return "";
  }
  const Json& fr = response["choices"][0].value("finish_reason", Json());
  return fr.is_string() ? fr.get<std::string>() : "";
}

}  // namespace

bool Server::LacksTokenIds(const store::CallRecord& call) {
  if (!call.prompt_ids.empty() || !call.completion_ids.empty()) return false;
  metrics_.calls_without_token_ids.fetch_add(1, std::memory_order_relaxed);
  if (!warned_no_token_ids_.exchange(true)) {
    cli::Warn(fmt::format("upstream {} answered a call of rollout {} without token ids: it ignores return_token_ids, so "
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

Task<bool> Server::HandleCall(tcp::socket& client, Request& req, const Route& route,
                              std::string path_rollout, ArrivingBody* arriving) {
  double t0 = MonotonicSeconds();
  // Gemini names the model and the method in the URL, not the body: the
  // format gets them as top-level "model"/"stream" fields, and countTokens
  // is its own (side-call) format.
  std::string format_name(route.format);
  Json url_fields;
  // Every stream is SSE except Gemini's streamGenerateContent without alt=sse (one JSON array).
  std::string stream_content_type = "text/event-stream";
  Status bad_url;
  if (route.format == "gemini") {
    auto gemini = GeminiFormat::ParseRoute(std::string_view(req.target().data(), req.target().size()));
    if (gemini.ok()) {
      if (gemini->method == "countTokens") format_name = "gemini-count-tokens";
      url_fields = {{"model", gemini->model}, {"stream", gemini->stream}, {"alt", gemini->sse ? "sse" : "json"}};
      if (gemini->stream && !gemini->sse) stream_content_type = "application/json";
    } else {
      bad_url = gemini.status();
    }
  }
  std::unique_ptr<ClientFormat> format = MakeClientFormat(format_name);
  auto fail = [&](int status, const std::string& message, Headers headers = Headers()) -> Task<bool> {
    if (status < 500) metrics_.client_errors.fetch_add(1);
    // Upstream addresses stay in the log and the store.
    return Send(client, req, static_cast<http::status>(status),
                format->ErrorBody(status, WithoutAddresses(message, config_.upstreams)).dump(), "application/json",
                std::move(headers));
  };
  if (stopping_.load()) co_return co_await fail(503, "forge-proxy is shutting down");

  // Attribution.
  std::string secret;
  auto auth_header = req[http::field::authorization];
  std::string_view auth(auth_header.data(), auth_header.size());
  if (auth.rfind("Bearer ", 0) == 0) secret = std::string(auth.substr(7));
  if (secret.empty()) secret = std::string(req["x-api-key"]);
  if (secret.empty()) secret = std::string(req["x-goog-api-key"]);
  std::string rollout;
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
  // The path's secret first, then the header's. (Pointers, not a braced list
  // of strings: g++12 coroutines reject its array, and copies cost two allocations a call.)
  for (const std::string* candidate_text : {&path_rollout, &secret}) {
    const std::string& candidate = *candidate_text;
    if (candidate.empty() || !rollout.empty()) continue;
    auto owner = owner_of(candidate);
    if (!owner.ok()) co_return co_await fail(503, "store unavailable: " + owner.status().message());
    rollout = std::move(*owner);
  }
  if (rollout.empty() && !path_rollout.empty()) {
    // /r/<rollout-id>/ with the rollout's secret as the key, or any id in --open mode.
    auto by_secret = owner_of(secret);
    if (config_.open || (by_secret.ok() && *by_secret == path_rollout)) rollout = path_rollout;
  }
  if (rollout.empty() && ended) {
    co_return co_await fail(401, fmt::format("rollout {} has {}: its secret is no longer accepted", ended->rollout,
                                             ended->ended == "finished" ? "finished" : "been cancelled"));
  }
  if (rollout.empty() && config_.open) rollout = "anonymous";
  if (rollout.empty()) {
    co_return co_await fail(401, secret.empty() && path_rollout.empty()
                                     ? "no API key: send the rollout's secret as the bearer token or x-api-key"
                                     : "unknown rollout secret");
  }

  // The request. The upstream's own formats are handled as bytes (see
  // pass_through.h); the others are parsed and translated.
  const bool pass_through = route.passes_through();
  // A large body still arriving goes upstream as it comes (cut_through.cpp),
  // read and checked there; any other call reads it whole first.
  const bool cut_through = arriving && pass_through && !replay_ && config_.upstream_api != "anthropic";
  if (arriving && !cut_through) {
    beast::error_code ec;
    co_await ReadRestOfBody(*arriving, req.body(), ec);
    if (ec) co_return false;
  }
  std::optional<PassThroughRequest> raw;
  Json client_request;
  ChatRequest chat;
  if (cut_through) {
    // (read below, as its bytes go upstream)
  } else if (pass_through && !replay_) {
    auto read = ReadPassThroughRequest(req.body(), route.format == "openai-completions", config_.max_json_depth);
    if (!read.ok()) co_return co_await fail(400, read.status().message());
    raw = std::move(*read);
    chat.stream = raw->stream;
    chat.side_call = raw->side_call;
  } else {
    // (ParseJson, not nlohmann's parser: a 200 KB conversation in ~0.1 ms, not ~2.)
    std::string parse_error;
    // Nesting is bounded here, so the translations, which recurse, never meet
    // a document deeper than --max-json-depth.
    if (std::optional<Json> parsed = ParseJson(req.body(), &parse_error, config_.max_json_depth)) {
      client_request = std::move(*parsed);
    } else {
      parse_error = RequestJsonError(parse_error);
    }
    if (!parse_error.empty()) co_return co_await fail(400, parse_error);
    if (!bad_url.ok()) co_return co_await fail(404, bad_url.message());
    // The document itself, not a copy (a 200 KB conversation), unless fields
    // from the URL join it (Gemini's model and method).
    const Json* translated_input = &client_request;
    Json with_url_fields;
    if (url_fields.is_object() && client_request.is_object()) {
      with_url_fields = client_request;
      with_url_fields.update(url_fields);
      translated_input = &with_url_fields;
    }
    auto translated = format->ToChat(*translated_input);
    if (!translated.ok()) co_return co_await fail(400, translated.status().message());
    chat = std::move(*translated);
    // Chat and completions requests go as bytes and keep their max_tokens.
    CapMaxTokens(chat.body, config_.max_tokens_cap);
  }

  if (config_.max_per_rollout > 0) {
    std::lock_guard<std::mutex> lock(rollout_mutex_);
    auto it = rollout_in_flight_.find(rollout);
    if (it != rollout_in_flight_.end() && it->second >= config_.max_per_rollout) {
      metrics_.client_errors.fetch_add(1);
      auto body = format->ErrorBody(429, "rollout " + rollout + " already has " + std::to_string(it->second) +
                                             " calls in flight (--max-per-rollout)");
      Headers headers;
      headers.emplace_back("Retry-After", "1");
      co_return co_await Send(client, req, http::status::too_many_requests, body.dump(), "application/json",
                              std::move(headers));
    }
  }
  // Paused for a weight update: wait, or tell the client to come back.
  if (paused_.load()) {
    if (pause_rejects_.load()) {
      Headers headers;
      headers.emplace_back("Retry-After", "2");
      headers.emplace_back("X-Forge-Paused", "1");
      co_return co_await fail(429, "paused for a policy update; retry shortly", std::move(headers));
    }
    net::steady_timer timer(co_await net::this_coro::executor);
    for (int waits = 1; paused_.load() && !stopping_.load(); ++waits) {
      timer.expires_after(std::chrono::milliseconds(20));
      beast::error_code ec;
      co_await timer.async_wait(Into(ec));
      // A client that gave up meanwhile would be sent upstream on resume, for no one.
      if (waits % 10 == 0 && HasHungUp(client)) co_return false;
    }
  }
  // The request text goes into the call log while the upstream works (once
  // its last byte is sent), so the call's own record, logged before its
  // last bytes go out, is short.
  std::optional<LoggedRequest> logged_request;
  auto make_request = [&](const Upstream& u) {
    RequestHead up(u.base_path + std::string(route.upstream_path));
    up.Set("Host", u.host + ":" + u.port);
    up.Set("Content-Type", "application/json");
    // (A body forwarded as it arrives is sent before it says whether it streams.)
    up.Set("Accept", cut_through ? "application/json, text/event-stream"
                                 : chat.stream ? "text/event-stream" : "application/json");
    if (!upstreams_.api_key().empty()) up.Set("Authorization", "Bearer " + upstreams_.api_key());
    return up;
  };
  CutThrough forwarded;
  if (cut_through) {
    co_await ForwardArrivingBody(rollout, req, *arriving, make_request, route.format == "openai-completions", raw,
                                 forwarded, [&] { logged_request = recorder_->LogRequestText(req.body(), rollout); });
    if (forwarded.outcome == CutThrough::Outcome::kClientGone) co_return false;
    if (forwarded.outcome == CutThrough::Outcome::kBadRequest) co_return co_await fail(400, forwarded.error);
    chat.stream = raw->stream;
    chat.side_call = raw->side_call;
  }

  InFlight in_flight(metrics_, rollout_mutex_, config_.max_per_rollout > 0 ? &rollout_in_flight_ : nullptr, rollout);
  metrics_.calls.fetch_add(1);

  store::CallRecord rec;
  rec.rollout_id = rollout;
  rec.started_at = NowSeconds();
  rec.client_format = format->name();
  rec.side_call = chat.side_call;
  rec.policy_version_start = policy_version_.load();
  bool streaming = chat.stream;
  // Only SDKs that mark their retries get retry keys (and pay for hashing the body).
  std::string retry_key;
  if (auto h = req["x-stainless-retry-count"]; !h.empty()) {
    retry_key = retry_keys_.KeyFor(rollout, req.body(), std::atoi(std::string(h).c_str()));
  }

  auto finish = [&](store::CallRecord& r) {
    r.ended_at = NowSeconds();
    r.policy_version_end = policy_version_.load();
    metrics_.ObserveLatency(MonotonicSeconds() - t0);
  };

  // Replay: answer from the recordings, nothing goes upstream; the call is
  // recorded again with the recorded token data.
  if (replay_) {
    const RecordedExchange* recorded = replay_->Next(ReplayIndex::RequestKey(format->name(), client_request));
    if (!recorded) co_return co_await fail(404, "replay: no recorded response matches this request");
    rec.upstream = "replay:" + config_.replay_path;
    rec.model = recorded->model.empty() ? JsonText(chat.body, "model") : recorded->model;
    rec.first_token_at = NowSeconds();
    rec.upstream_request = chat.body;
    rec.request = std::move(client_request);
    rec.upstream_response = recorded->response;
    rec.prompt_ids = recorded->prompt_ids;
    rec.completion_ids = recorded->completion_ids;
    rec.logprobs = recorded->logprobs;
    rec.finish_reason = FinishReasonOf(recorded->response);
    rec.usage = recorded->response.value("usage", Json());
    rec.http_status = 200;
    rec.retry_key = retry_key;
    std::string bytes;
    if (streaming) {
      auto translator = format->NewStream();
      for (const Json& chunk : ChatResponseToChunks(recorded->response)) bytes += translator->OnChunk(chunk);
      bytes += translator->OnEnd();
      rec.response = translator->Assembled();
    } else {
      auto out = format->FromChat(recorded->response);
      if (!out.ok()) co_return co_await fail(500, "replay: " + out.status().message());
      bytes = DumpJson(*out);
      rec.response = std::move(*out);
    }
    finish(rec);
    Status committed = co_await Commit(std::move(rec));
    if (!committed.ok()) co_return co_await fail(500, "the call could not be recorded: " + committed.message());
    format->Finished(chat, recorded->response);
    if (!streaming) co_return co_await Send(client, req, http::status::ok, std::move(bytes));
    ClientStream cs;
    cs.socket = &client;
    cs.version = req.version();
    cs.content_type = stream_content_type;
    co_await WriteSseBytes(cs, std::move(bytes), true);
    co_return !cs.failed;
  }

  // An Anthropic-format upstream (a teacher API): Messages pass through untranslated.
  if (config_.upstream_api == "anthropic") {
    if (format->name() != "anthropic" && format->name() != "anthropic-count-tokens") {
      co_return co_await fail(400, "this proxy's upstream speaks Anthropic Messages (--upstream-api anthropic); "
                                   "only /v1/messages and /v1/messages/count_tokens are served");
    }
    co_return co_await HandleAnthropicUpstream(client, req, *format, streaming, client_request, rec, retry_key, t0);
  }

  // The upstream request: the client's, plus the capture fields.
  CaptureWants wants;
  bool client_wants_usage = true;
  BodyPieces upstream_body;
  if (raw) {
    wants = raw->wants;
    client_wants_usage = raw->client_wants_usage;
    rec.model = std::move(raw->model);
    // The store keeps the request as its bytes and the upstream request as
    // the few fields that differ. (req is only read for its headers from here.)
    rec.upstream_request_patch_text = std::move(raw->upstream_patch);
    rec.request_text = std::move(req.body());
    upstream_body = {std::string_view(rec.request_text).substr(raw->kept_from, raw->kept), raw->added};
  } else {
    Json body = std::move(chat.body);
    wants = AddCaptureFields(body, route.format == "openai-completions");
    if (streaming) {
      body["stream"] = true;
      // Usage for the record; stripped below when the client did not ask.
      if (!body.contains("stream_options")) body["stream_options"] = {{"include_usage", true}};
    }
    // Chat clients get the usage chunk only when they asked; the other formats
    // always carry usage in their own end events.
    rec.model = JsonText(body, "model");
    // Its text is both what goes upstream and the record's (the store's
    // writer slices it into parts as it does a request's bytes).
    rec.upstream_request_text = DumpJson(body);
    upstream_body = rec.upstream_request_text;
    // The request as the harness sent it: its bytes, which go into the call
    // log while the upstream works (as a pass-through call's do), so the
    // call's own record, written before its last bytes, does not carry them.
    rec.request_text = std::move(req.body());
  }

  auto log_request = [&] {
    if (!logged_request && !rec.request_text.empty()) {
      logged_request = recorder_->LogRequestText(rec.request_text, rec.rollout_id);
    }
  };

  auto cs = std::make_shared<ClientStream>();
  cs->socket = &client;
  cs->version = req.version();
  cs->content_type = stream_content_type;
  // No keepalive comments for Gemini clients: the google-genai SDK's SSE
  // reader (Gemini CLI's) matches /^\s*data: .../ at the start of its buffer,
  // so a comment before the first event makes it drop every event after it;
  // behind a first token slower than --keepalive, Gemini CLI got an empty
  // answer and sent the call again (issue 36's fault matrix, "slow").
  if (streaming && config_.keepalive_interval > 0 && cs->content_type == "text/event-stream" &&
      route.format != "gemini") {
    cs->keepalive_timer = std::make_unique<net::steady_timer>(co_await net::this_coro::executor);
    net::co_spawn(co_await net::this_coro::executor, KeepAlive(cs, config_.keepalive_interval), net::detached);
  }
  // Every exit from here waits for the keepalive coroutine, which uses `client`.
  auto stop_keepalive = [&]() -> Task<void> {
    co_await TakeOver(*cs);
    co_await WaitWhile(cs->keepalive_running);
  };

  // Ends the call with an error: a JSON error if nothing was streamed yet
  // (with the upstream's retry headers, if it sent any), else a well-formed
  // error event; the call is recorded as failed.
  auto fail_call = [&](int status, std::string message, Headers headers = Headers()) -> Task<bool> {
    metrics_.upstream_errors.fetch_add(status >= 500 ? 1 : 0);
    rec.http_status = status;
    rec.error = message;
    rec.retry_key.clear();  // a failed call never hides a retry that succeeds
    finish(rec);
    co_await Commit(std::move(rec), logged_request);  // best effort: the client is told of the failure either way
    co_await stop_keepalive();
    if (status == kClientHungUpStatus) co_return false;  // no one to tell
    if (!cs->headers_sent) co_return co_await fail(status, message, std::move(headers));
    auto translator = format->NewStream();
    co_await WriteSseBytes(*cs, translator->OnError(WithoutAddresses(message, config_.upstreams)), true);
    co_return false;
  };

  // Connect and send; connection failures are retried on another upstream
  // before any byte of the answer exists, and with --upstream-retries a
  // failure or a 429/502/503 is tried again (each attempt recorded).
  UpstreamExchange exchange;
  exchange.client = &client;
  std::string error_text;  // an error answer's body
  for (int attempt = 0;; ++attempt) {
    co_await ExchangeWithUpstream(rollout, exchange, make_request, upstream_body, log_request, &forwarded);
    std::string failure = exchange.error;
    const http::fields* answer = exchange.conn ? &exchange.parser->get().base() : nullptr;
    if (answer && exchange.parser->get().result_int() >= 400) {
      int status = exchange.parser->get().result_int();
      error_text.clear();
      beast::error_code ec = co_await AppendWholeUpstreamBody(exchange, error_text);
      failure = UpstreamErrorMessage(status, error_text);
      if (attempt >= config_.upstream_retries || !RetryableStatus(status, *answer, config_.retry_after_max)) break;
      if (!ec && exchange.parser->get().keep_alive()) upstreams_.Release(*exchange.upstream, std::move(exchange.conn));
    } else if (answer || exchange.client_gone || exchange.timed_out || attempt >= config_.upstream_retries) {
      break;
    }
    // Tried again: this attempt is recorded as a failed call of its own.
    metrics_.upstream_retries.fetch_add(1);
    store::CallRecord failed = rec;
    if (exchange.upstream) failed.upstream = exchange.upstream->url;
    failed.http_status = answer ? exchange.parser->get().result_int() : 502;
    failed.error = failure + fmt::format(" (retried by the proxy, attempt {} of {})", attempt + 1,
                                         config_.upstream_retries + 1);
    failed.retry_key.clear();
    finish(failed);
    co_await Commit(std::move(failed));
    net::steady_timer pause(co_await net::this_coro::executor);
    pause.expires_after(SteadySeconds(RetryDelay(attempt + 1, answer)));
    beast::error_code ec;
    co_await pause.async_wait(Into(ec));
    exchange.Reset();
    if (HasHungUp(client)) co_return co_await fail_call(kClientHungUpStatus, kClientHungUpMessage);
  }
  std::unique_ptr<UpstreamConn>& conn = exchange.conn;
  Upstream* upstream = exchange.upstream;
  std::optional<http::response_parser<http::buffer_body>>& parser = exchange.parser;
  if (!conn) {
    co_return co_await fail_call(exchange.client_gone ? kClientHungUpStatus : exchange.timed_out ? 504 : 502,
                                 exchange.error);
  }
  rec.upstream = upstream->url;
  OutstandingCall outstanding(*upstream);

  int upstream_status = parser->get().result_int();
  std::string content_type(parser->get()[http::field::content_type]);
  bool upstream_streams = content_type.find("text/event-stream") != std::string::npos;

  // Reads body bytes into buf, and returns how many: what came in with the
  // header first (often the whole body), then from the upstream.
  auto read_body = [&](net::mutable_buffer buf, beast::error_code& ec) -> Task<size_t> {
    parser->get().body().data = buf.data();
    parser->get().body().size = buf.size();
    co_await ReadHttp(conn->stream, conn->buffer, *parser, ReadUntil::kSome, ec);
    if (ec == http::error::need_buffer) ec = {};
    co_return buf.size() - parser->get().body().size;
  };

  if (upstream_status >= 400) {
    // The upstream's status and retry headers, in the client's own error shape.
    co_return co_await fail_call(upstream_status, UpstreamErrorMessage(upstream_status, error_text),
                                 RetryHeaders(parser->get()));
  }
  if (streaming && !upstream_streams) {
    co_return co_await fail_call(502, "upstream answered a stream request with " + content_type + ", not SSE");
  }

  CapturedTokens tokens;
  if (!streaming) {
    std::string text;
    beast::error_code ec = co_await AppendWholeUpstreamBody(exchange, text);
    if (ec == ClientHungUp()) co_return co_await fail_call(kClientHungUpStatus, kClientHungUpMessage);
    if (ec) {
      co_return co_await fail_call(ec == beast::error::timeout ? 504 : 502,
                                   "upstream " + upstream->url + " failed mid-response: " + ec.message());
    }
    if (parser->get().keep_alive()) upstreams_.Release(*upstream, std::move(conn));
    rec.first_token_at = NowSeconds();
    if (raw) {
      auto chunk = CaptureAndStrip(text, wants, false, tokens);
      if (!chunk.ok()) co_return co_await fail_call(502, "upstream " + upstream->url + " answered with invalid JSON");
      rec.response_text = chunk->text;
      rec.upstream_response_text = chunk->text;
      rec.prompt_ids = std::move(tokens.prompt_ids);
      rec.completion_ids = std::move(tokens.completion_ids);
      rec.logprobs = std::move(tokens.logprobs);
      rec.finish_reason = chunk->finish_reason;
      rec.usage_text = std::move(chunk->usage);
      if (LacksTokenIds(rec)) co_return co_await fail_call(502, kNoTokenIdsMessage);
      rec.http_status = 200;
      rec.retry_key = retry_key;
      finish(rec);
      Status committed = co_await Commit(std::move(rec), logged_request);
      if (!committed.ok()) co_return co_await fail(500, "the call could not be recorded: " + committed.message());
      co_return co_await Send(client, req, http::status::ok, std::move(chunk->text));
    }
    // The token fields are read and cut from the bytes, as for a stream's
    // chunks: the answer carries every prompt token's id (tens of thousands,
    // ~4 ms to parse into a document), the translation needs none of them.
    auto stripped = CaptureAndStrip(text, wants, false, tokens);
    if (!stripped.ok()) co_return co_await fail_call(502, "upstream " + upstream->url + " answered with invalid JSON");
    if (stripped->is_error) {
      co_return co_await fail_call(502, "upstream " + upstream->url + " answered 200 with an error: " + stripped->text);
    }
    Json response = ParseJsonOrDiscarded(stripped->text);
    auto out = format->FromChat(response);
    if (!out.ok()) co_return co_await fail_call(502, "cannot translate the upstream response: " + out.status().message());
    rec.upstream_response = response;
    rec.response = *out;
    rec.prompt_ids = std::move(tokens.prompt_ids);
    rec.completion_ids = std::move(tokens.completion_ids);
    rec.logprobs = std::move(tokens.logprobs);
    rec.finish_reason = FinishReasonOf(response);
    rec.usage = response.value("usage", Json());
    if (LacksTokenIds(rec)) co_return co_await fail_call(502, kNoTokenIdsMessage);
    rec.http_status = 200;
    rec.retry_key = retry_key;
    finish(rec);
    std::string bytes = DumpJson(*out);
    Status committed = co_await Commit(std::move(rec), logged_request);
    if (!committed.ok()) co_return co_await fail(500, "the call could not be recorded: " + committed.message());
    format->Finished(chat, response);
    co_return co_await Send(client, req, http::status::ok, std::move(bytes));
  }

  // Streaming: relay each event as it arrives; hold back the final chunks
  // until the call is committed.
  auto translator = format->NewStream();
  // The translator assembles the client's view; pass-through formats see the
  // same chunks, so only translating formats need a second, chat-form assembly.
  // (Byte-level pass-through assembles its own, from the stripped chunks.)
  ChatAssembler upstream_assembled;
  Json usage;
  SseParser sse;
  SseEvents events;
  std::string held;
  bool saw_done = false;
  std::string stream_error;
  bool upstream_broke = false;  // its connection broke or went silent mid-answer
  // An event that is not JSON goes to the client as the upstream sent it, in
  // the client's format's framing, and the stream goes on, as it would from
  // a server with that bug (harnesses differ: some skip it, some fail and
  // retry). The record keeps the tokens before it and says so.
  std::string malformed_note;
  CapturedTokens tokens_before_malformed;
  auto relay_malformed = [&](const std::string& data, std::string& out) {
    if (malformed_note.empty()) {
      malformed_note = "upstream " + upstream->url + " sent an event that is not JSON (relayed to the client as sent; "
                       "the recorded tokens end before it)";
      tokens_before_malformed = std::move(tokens);
      tokens = CapturedTokens();
    }
    out += held;
    held.clear();
    out += raw ? "data: " + data + "\n\n" : translator->OnMalformed(data);
  };
  // What the upstream has sent by the time of a read is relayed in one
  // write: an unpaced upstream's whole answer, mostly. (Not zeroed: only
  // the bytes a read brings are touched, so a slow stream stays small.)
  constexpr size_t kStreamReadBytes = 64 * 1024;
  std::unique_ptr<char[]> buf(new char[kStreamReadBytes]);
  if (conn->buffer.capacity() < kStreamReadBytes) conn->buffer.reserve(kStreamReadBytes);
  while (!parser->is_done() && !saw_done) {
    beast::error_code ec;
    size_t n = co_await read_body(net::buffer(buf.get(), kStreamReadBytes), ec);
    events.clear();
    if (!sse.Feed(std::string_view(buf.get(), n), events)) {
      stream_error = "upstream " + upstream->url + " sent an SSE line longer than 64 MiB";
      upstream_broke = true;
      break;
    }
    std::string out;
    for (SseEvent& event : events) {
      if (event.data == "[DONE]") {
        saw_done = true;
        break;
      }
      if (raw) {
        // Most chunks are a piece of content: relayed from one walk over their
        // bytes (stream_relay.h), the rest the full way. (After a held final
        // chunk, the full way too: what it holds goes out only before a
        // chunk that is not final.)
        if (held.empty() && RelayContentChunk(event.data, wants, !client_wants_usage, tokens, upstream_assembled, out)) {
          if (rec.first_token_at == 0) rec.first_token_at = NowSeconds();
          continue;
        }
        auto chunk = CaptureAndStrip(event.data, wants, !client_wants_usage, tokens);
        if (!chunk.ok()) {
          relay_malformed(event.data, out);
          continue;
        }
        if (chunk->is_error) {
          stream_error = "upstream " + upstream->url + " error: " + chunk->text;
          break;
        }
        if (rec.first_token_at == 0) rec.first_token_at = NowSeconds();
        if (!chunk->usage.empty()) usage = Json::parse(chunk->usage, nullptr, false);
        if (chunk->usage_only && !client_wants_usage) continue;
        if (!upstream_assembled.AddContentDelta(chunk->text)) upstream_assembled.Add(ParseJsonOrDiscarded(chunk->text));
        std::string& target = chunk->final ? held : out;
        if (!chunk->final) {
          out += held;
          held.clear();
        }
        target += "data: ";
        target += chunk->text;
        target += "\n\n";
        continue;
      }
      // Token ids and logprobs are read and cut from the bytes, so the
      // document the translation needs is parsed from the smaller chunk.
      auto stripped = CaptureAndStrip(event.data, wants, false, tokens);
      if (!stripped.ok()) {
        relay_malformed(event.data, out);
        continue;
      }
      if (stripped->is_error) {
        stream_error = "upstream " + upstream->url + " error: " + Json::parse(stripped->text, nullptr, false).dump();
        break;
      }
      if (rec.first_token_at == 0) rec.first_token_at = NowSeconds();
      // Most chunks are a piece of content: the translator takes the text alone.
      std::string content_bytes;
      auto piece = ReadContentDelta(stripped->text);
      if (auto content = piece ? ContentDeltaText(*piece) : std::nullopt;
          content && translator->OnContentDelta(*content, content_bytes)) {
        if (!upstream_assembled.AddContentDelta(*piece)) {
          upstream_assembled.Add(ParseJsonOrDiscarded(stripped->text));
        }
        out += held;
        held.clear();
        out += content_bytes;
        continue;
      }
      Json chunk = ParseJsonOrDiscarded(stripped->text);
      if (chunk.contains("usage") && !chunk["usage"].is_null()) usage = chunk["usage"];
      if (!pass_through) upstream_assembled.Add(chunk);
      bool usage_only = chunk.contains("choices") && chunk["choices"].is_array() && chunk["choices"].empty();
      if (usage_only && !client_wants_usage) continue;
      if (!client_wants_usage && chunk.contains("usage")) chunk.erase("usage");
      std::string bytes = translator->OnChunk(chunk);
      if (IsFinalChunk(chunk)) {
        held += bytes;
      } else {
        out += held;
        held.clear();
        out += bytes;
      }
    }
    if (!stream_error.empty()) break;
    if (!out.empty()) {
      if (!cs->call_started_writing) co_await stop_keepalive();
      co_await WriteSseBytes(*cs, std::move(out), false);
      if (cs->failed) {
        stream_error = "the client closed the connection mid-stream";
        break;
      }
    }
    if (ec == ClientHungUp()) {
      cs->failed = true;  // recorded as the client's doing, and nothing more is written
      stream_error = kClientHungUpMessage;
      break;
    }
    if (ec) {
      stream_error = "upstream " + upstream->url + (ec == beast::error::timeout ? " stalled mid-stream: " : " broke off the stream: ") + ec.message();
      upstream_broke = true;
      break;
    }
  }
  if (stream_error.empty() && !saw_done) {
    stream_error = "upstream " + upstream->url + " ended the stream without [DONE]";
    upstream_broke = true;
  }
  if (!cs->call_started_writing) co_await stop_keepalive();

  if (raw) {
    // Recorded as text: a stream's logprobs (an object per token) are never
    // made a document. The upstream's answer differs only by its usage.
    std::tie(rec.response_text, rec.upstream_response_text) = upstream_assembled.ResultTexts(usage);
    rec.finish_reason = upstream_assembled.FinishReason();
  } else {
    rec.response = translator->Assembled();
    rec.upstream_response = pass_through ? rec.response : upstream_assembled.Result();
    if (!usage.is_null()) rec.upstream_response["usage"] = usage;
    rec.finish_reason = FinishReasonOf(rec.upstream_response);
  }
  // Kept past the commit only for a format that reads it in Finished (the
  // pass-through formats do not).
  const Json upstream_response = pass_through ? Json() : rec.upstream_response;
  if (!malformed_note.empty()) tokens = std::move(tokens_before_malformed);
  rec.prompt_ids = std::move(tokens.prompt_ids);
  rec.completion_ids = std::move(tokens.completion_ids);
  rec.logprobs = std::move(tokens.logprobs);
  rec.usage = usage;
  if (stream_error.empty() && LacksTokenIds(rec) && malformed_note.empty()) stream_error = kNoTokenIdsMessage;
  if (!stream_error.empty()) {
    metrics_.upstream_errors.fetch_add(cs->failed ? 0 : 1);
    rec.http_status = cs->failed ? kClientHungUpStatus : 502;
    rec.error = stream_error;
    finish(rec);
    co_await Commit(std::move(rec), logged_request);
    if (cs->failed) co_return false;
    if (upstream_broke) {
      // As the upstream's did, the client's connection breaks after what was
      // sent (no clean end): harnesses retry a broken stream, not an error event.
      if (!held.empty()) co_await WriteSseBytes(*cs, std::move(held), false);
      co_return false;
    }
    co_await WriteSseBytes(*cs, held + translator->OnError(WithoutAddresses(stream_error, config_.upstreams)), true);
    co_return false;  // the upstream connection is not reusable; close the client's too
  }
  if (parser->is_done() && parser->get().keep_alive()) {
    upstreams_.Release(*upstream, std::move(conn));
  }
  if (!malformed_note.empty()) {
    // The client's stream ends as the upstream's did; the record is a failed
    // call whose tokens stop before the broken event (as a cut stream's do).
    metrics_.upstream_errors.fetch_add(1);
    rec.http_status = 502;
    rec.error = malformed_note;
    finish(rec);
    co_await Commit(std::move(rec), logged_request);
    co_await WriteSseBytes(*cs, held + translator->OnEnd(), true);
    co_return !cs->failed;
  }
  rec.http_status = 200;
  rec.retry_key = retry_key;
  finish(rec);
  Status committed = co_await Commit(std::move(rec), logged_request);
  if (!committed.ok()) {
    co_await WriteSseBytes(*cs, translator->OnError("the call could not be recorded: " + committed.message()), true);
    co_return false;
  }
  format->Finished(chat, upstream_response);
  co_await WriteSseBytes(*cs, held + translator->OnEnd(), true);
  co_return !cs->failed;
}

}  // namespace forge::proxy
