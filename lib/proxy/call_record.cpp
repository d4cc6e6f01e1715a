#include "proxy/call_record.h"

#include <memory>

#include "proxy/asio.h"

namespace forge::proxy {

CallRecording::CallRecording(const Services& services, const std::string& rollout, const std::string& client_format,
                             bool side_call, std::string retry_key, double t0, std::optional<LoggedRequest> logged)
    : services_(services), t0_(t0), retry_key_(std::move(retry_key)), logged_(logged) {
  rec_.rollout_id = rollout;
  rec_.started_at = NowSeconds();
  rec_.client_format = client_format;
  rec_.side_call = side_call;
  rec_.policy_version_start = services_.admission.policy_version();
}

CallRecording::~CallRecording() {
  if (committed_) return;
  // Left without its commit (an exception on the call's path): recorded as
  // failed, without waiting for the writer.
  rec_.http_status = 500;
  rec_.error = "forge-proxy failed while handling the call";
  End(rec_);
  retried_.push_back(std::move(rec_));
  for (store::CallRecord& rec : retried_) {
    services_.recorder.Submit(std::move(rec), [] { return Recorder::Done([](Status) {}); });
  }
}

void CallRecording::LogRequest() {
  if (logged_ || rec_.request_text.empty()) return;
  logged_ = services_.recorder.LogRequestText(rec_.request_text, rec_.rollout_id);
}

void CallRecording::AddRetriedAttempt(const FailedAttempt& attempt) {
  store::CallRecord failed = rec_;
  failed.upstream = attempt.upstream;
  failed.http_status = attempt.status;
  failed.error = attempt.error;
  End(failed);
  retried_.push_back(std::move(failed));
}

Task<Status> CallRecording::Commit(const Outcome& outcome) {
  committed_ = true;
  for (store::CallRecord& failed : retried_) co_await Submit(std::move(failed), std::nullopt);
  retried_.clear();
  services_.metrics.upstream_errors.fetch_add(outcome.status >= 500 ? 1 : 0);
  rec_.http_status = outcome.status;
  rec_.error = outcome.error;
  if (outcome.error.empty()) rec_.retry_key = std::move(retry_key_);
  End(rec_);
  co_return co_await Submit(std::move(rec_), logged_);
}

void CallRecording::End(store::CallRecord& rec) {
  rec.ended_at = NowSeconds();
  rec.policy_version_end = services_.admission.policy_version();
  services_.metrics.ObserveLatency(MonotonicSeconds() - t0_);
}

// rec is taken (moved into the writer's queue) before the first suspension:
// its owner co_awaits this at once, so a reference does.
Task<Status> CallRecording::Submit(store::CallRecord&& rec, std::optional<LoggedRequest> logged) {
  if (rec.http_status == kClientHungUpStatus) services_.metrics.client_hangups.fetch_add(1, std::memory_order_relaxed);
  // The writer's answer arrives by a post to this call's io thread, so it
  // never races with the wait below.
  struct Waiting {
    std::optional<Status> result;
    std::optional<asio::steady_timer> timer;
  };
  auto executor = co_await asio::this_coro::executor;
  std::shared_ptr<Waiting> waiting;
  auto submitted = services_.recorder.Submit(std::move(rec), [&] {
    waiting = std::make_shared<Waiting>();
    return Recorder::Done([waiting, executor](Status status) {
      asio::post(executor, [waiting, status] {
        waiting->result = status;
        if (waiting->timer) waiting->timer->cancel();
      });
    });
  }, logged);
  if (submitted) co_return *submitted;  // the usual case: final at once
  waiting->timer.emplace(executor, asio::steady_timer::time_point::max());
  while (!waiting->result) {
    beast::error_code ec;
    co_await waiting->timer->async_wait(Into(ec));
  }
  co_return *waiting->result;
}

}  // namespace forge::proxy
