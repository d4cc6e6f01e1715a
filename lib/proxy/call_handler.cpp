#include "proxy/call_handler_asio.h"

#include <chrono>
#include <memory>

#include "proxy/asio.h"
#include "proxy/attribute.h"
#include "proxy/ready_io_asio.h"

namespace forge::proxy {

namespace {

// One record of the commit to the store's writer (CallRecording::Submit),
// waited for on this io thread when the writer's queue is full. rec is taken
// before the first suspension: its owner co_awaits this at once, so a
// reference does.
Task<Status> Submit(CallRecording& recording, store::CallRecord&& rec, std::optional<LoggedRequest> logged) {
  // The writer's answer arrives by a post to this call's io thread, so it
  // never races with the wait below.
  struct Waiting {
    std::optional<Status> result;
    std::optional<asio::steady_timer> timer;
  };
  auto executor = co_await asio::this_coro::executor;
  std::shared_ptr<Waiting> waiting;
  auto submitted = recording.Submit(std::move(rec), logged, [&] {
    waiting = std::make_shared<Waiting>();
    return Recorder::Done([waiting, executor](Status status) {
      asio::post(executor, [waiting, status] {
        waiting->result = status;
        if (waiting->timer) waiting->timer->cancel();
      });
    });
  });
  if (submitted) co_return *submitted;  // the usual case: final at once
  waiting->timer.emplace(executor, asio::steady_timer::time_point::max());
  while (!waiting->result) {
    beast::error_code ec;
    co_await waiting->timer->async_wait(Into(ec));
  }
  co_return *waiting->result;
}

}  // namespace

CallHandler::CallHandler(const CallServices& services, tcp::socket& client, Request& req, const Route& route)
    : services_(services),
      client_(client),
      req_(req),
      t0_(MonotonicSeconds()),
      limits_{services.config.max_json_depth, services.config.max_tokens_cap},
      call_(route, std::string_view(req.target().data(), req.target().size())),
      reply_(client, req, call_.url, *call_.format, services.stopping, services.config.upstreams, services.metrics) {}

Task<bool> CallHandler::Run(std::string path_rollout, ArrivingBody* arriving) {
  // Attribute: who calls.
  std::optional<Refusal> refused = Attribute(std::move(path_rollout));
  if (refused) co_return co_await reply_.Refuse(std::move(*refused));
  // Decode: what is asked. A large body in the upstream's own format goes
  // upstream as it arrives, read on the way (Forward, below); any other is
  // read whole first.
  const bool cut_through = arriving && call_.route.passes_through() && !services_.replay &&
                           services_.upstream_api == UpstreamApiKind::kOpenAI;
  if (arriving && !cut_through) {
    beast::error_code ec;
    co_await ReadRestOfBody(*arriving, req_.body(), ec);
    if (ec) co_return false;
  }
  if (!cut_through) refused = Decode(req_.body(), call_.route.passes_through() && !services_.replay, limits_, call_);
  // Admit: the rollout's cap, a pause.
  if (!refused) refused = services_.admission.Admit(rollout_);
  if (refused) co_return co_await reply_.Refuse(std::move(*refused));
  if (services_.admission.paused() && !co_await WaitOutPause()) co_return false;
  // Exchange: the upstream chosen from the decoded request (or, replaying, the recording).
  if ((refused = Choose(cut_through))) co_return co_await reply_.Refuse(std::move(*refused));
  CutThrough forwarded;
  if (cut_through) {
    co_await Forward(*arriving, forwarded);
    if (forwarded.outcome == CutThrough::Outcome::kClientGone) co_return false;
    if (forwarded.outcome == CutThrough::Outcome::kBadRequest) refused = Refusal{400, forwarded.error, {}};
    if (refused) co_return co_await reply_.Refuse(std::move(*refused));
  }
  // The call is in flight, with its record, from here.
  Admission::InFlight in_flight(services_.admission, rollout_);
  services_.metrics.calls.fetch_add(1);
  CallRecording recording(services_.recording, rollout_, call_.format->name(), call_.chat.side_call, RetryKey(),
                          t0_, logged_);
  // Exchange and relay: an Outcome. (Not a conditional expression: g++12
  // destroys the temporary of one holding a co_await twice.)
  Outcome outcome;
  if (replayed_) {
    outcome = RecordReplayAnswer(std::move(*replayed_), call_, services_.config.replay_path, recording.rec());
  } else {
    outcome = co_await ExchangeAndRelay(recording, forwarded);
  }
  // Commit.
  co_return co_await Commit(recording, std::move(outcome));
}

std::optional<Refusal> CallHandler::Attribute(std::string path_rollout) {
  if (services_.stopping.load()) return Refusal{503, "forge-proxy is shutting down", {}};
  auto field = [this](auto name) {
    auto value = req_[name];
    return std::string_view(value.data(), value.size());
  };
  Credentials credentials{std::move(path_rollout),
                          SecretOf(field(http::field::authorization), field("x-api-key"), field("x-goog-api-key"))};
  return forge::proxy::Attribute(credentials, services_.secrets, services_.config.open, rollout_);
}

Task<bool> CallHandler::WaitOutPause() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (int waits = 1; services_.admission.paused() && !services_.stopping.load(); ++waits) {
    timer.expires_after(std::chrono::milliseconds(20));
    beast::error_code ec;
    co_await timer.async_wait(Into(ec));
    // A client that gave up meanwhile would be sent upstream on resume, for no one.
    if (waits % 10 == 0 && HasHungUp(client_)) co_return false;
  }
  co_return true;
}

std::optional<Refusal> CallHandler::Choose(bool cut_through) {
  if (!services_.replay) {
    return ChooseUpstreamApi(services_.upstream_api, call_, req_, cut_through, services_.upstream, upstream_);
  }
  replayed_.emplace();
  return FindReplayAnswer(*services_.replay, call_, *replayed_);
}

Task<void> CallHandler::Forward(ArrivingBody& arriving, CutThrough& forwarded) {
  ExchangeRequest request{rollout_, [this](const Upstream& u) { return upstream_->Head(u); }, {},
                          [this] { logged_ = services_.recording.recorder.LogRequestText(req_.body(), rollout_); }};
  co_await ForwardArrivingBody(services_.exchange, request, limits_.max_json_depth, req_.body(), arriving, call_,
                               forwarded);
}

std::string CallHandler::RetryKey() {
  // Only SDKs that mark their retries get retry keys (and pay for hashing the body).
  auto count = req_["x-stainless-retry-count"];
  if (count.empty()) return "";
  return services_.retry_keys.KeyFor(rollout_, req_.body(), std::atoi(std::string(count).c_str()));
}

Task<Outcome> CallHandler::ExchangeAndRelay(CallRecording& recording, CutThrough& forwarded) {
  UpstreamApi& upstream = *upstream_;
  upstream.Prepare(std::move(req_.body()), recording.rec());  // req is only read for its headers from here
  const std::shared_ptr<ClientStream>& stream = reply_.stream();
  if (upstream.KeepsAlive() && call_.chat.stream && services_.config.keepalive_interval > 0 &&
      stream->content_type == "text/event-stream" && call_.url.keepalive_comments) {
    // (Not for a format whose clients take a comment for a broken stream: Gemini's, ClientUrl.)
    StartKeepAlive(stream, co_await asio::this_coro::executor, services_.config.keepalive_interval);
  }
  UpstreamAnswer answer(&client_);
  ExchangeRequest request{rollout_, [&upstream](const Upstream& u) { return upstream.Head(u); }, upstream.Body(),
                          [&recording] { recording.LogRequest(); }, &forwarded};
  bool answered = co_await OpenExchange(services_.exchange, request, answer,
                                        [&recording](FailedAttempt attempt) { recording.AddRetriedAttempt(attempt); });
  if (!answered) co_return Outcome::Failed(answer.FailureStatus(), answer.error);
  recording.rec().upstream = answer.upstream->url;
  co_return co_await upstream.Relay(answer, *stream, recording.rec());
}

Task<bool> CallHandler::Commit(CallRecording& recording, Outcome outcome) {
  // The retried attempts, then the call: its status is the commit's.
  CallRecording::Commits commits = recording.TakeCommits(outcome);
  for (store::CallRecord& failed : commits.retried) co_await Submit(recording, std::move(failed), std::nullopt);
  Status committed = co_await Submit(recording, std::move(commits.call), commits.logged);
  if (committed.ok() && outcome.finished) call_.format->Finished(call_.chat, *outcome.finished);
  co_return co_await reply_.Send(outcome, committed);
}

}  // namespace forge::proxy
