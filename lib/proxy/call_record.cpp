#include "proxy/call_record.h"

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

CallRecording::Commits CallRecording::TakeCommits(const Outcome& outcome) {
  committed_ = true;
  services_.metrics.upstream_errors.fetch_add(outcome.status >= 500 ? 1 : 0);
  rec_.http_status = outcome.status;
  rec_.error = outcome.error;
  if (outcome.error.empty()) rec_.retry_key = std::move(retry_key_);
  End(rec_);
  return Commits{std::move(retried_), std::move(rec_), logged_};
}

std::optional<Status> CallRecording::Submit(store::CallRecord&& rec, std::optional<LoggedRequest> logged,
                                            const std::function<Recorder::Done()>& when_waiting) {
  if (rec.http_status == kClientHungUpStatus) services_.metrics.client_hangups.fetch_add(1, std::memory_order_relaxed);
  return services_.recorder.Submit(std::move(rec), when_waiting, logged);
}

void CallRecording::End(store::CallRecord& rec) {
  rec.ended_at = NowSeconds();
  rec.policy_version_end = services_.admission.policy_version();
  services_.metrics.ObserveLatency(MonotonicSeconds() - t0_);
}

}  // namespace forge::proxy
