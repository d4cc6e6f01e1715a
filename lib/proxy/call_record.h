// A call's record, from the moment the call is admitted to its commit (the
// commit stage, call_handler_asio.h): the one owner of a store::CallRecord while
// the call runs. The stages fill it (the upstream API's request and answer
// fields); the commit takes it once (TakeCommits), with the Outcome's status
// and error, after the attempts the exchange retried (each recorded as a call
// of its own), and hands each to the store's writer through Submit.
// A call that leaves its handler without a commit (an exception on its path)
// is recorded as failed when the recording is destroyed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/admission.h"
#include "proxy/metrics.h"
#include "proxy/outcome.h"
#include "proxy/recorder.h"
#include "store/store.h"

namespace forge::proxy {

class CallRecording {
 public:
  struct Services {
    Recorder& recorder;
    Metrics& metrics;
    const Admission& admission;  // the policy version at the call's start and end
  };
  // The record's start: who calls (rollout), in which format, when (t0: on
  // the monotonic clock, for the latency metric). retry_key: the key the
  // call keeps if it succeeds (RetryKeys). logged: its request text already
  // in the call log (a body forwarded as it arrived).
  CallRecording(const Services& services, const std::string& rollout, const std::string& client_format,
                bool side_call, std::string retry_key, double t0, std::optional<LoggedRequest> logged);
  ~CallRecording();
  CallRecording(const CallRecording&) = delete;
  CallRecording& operator=(const CallRecording&) = delete;

  store::CallRecord& rec() { return rec_; }
  // The request's text (rec().request_text) into the call log, once, while
  // the upstream works, so the record logged before the call's final bytes is short.
  void LogRequest();
  // A failed attempt the exchange tries again: the record as it stands (the
  // request side), failed, to be committed before the call's own.
  void AddRetriedAttempt(const FailedAttempt& attempt);
  // What the commit writes, in order: the retried attempts, then the call
  // with outcome's status and error (a call that succeeded keeps its retry
  // key), each ended; logged: the call's request text already in the call
  // log. Taken once: the commit stage (call_handler.cpp) submits them and
  // waits for the writer on its io thread.
  struct Commits {
    std::vector<store::CallRecord> retried;
    store::CallRecord call;
    std::optional<LoggedRequest> logged;
  };
  Commits TakeCommits(const Outcome& outcome);
  // Hands one record to the store's writer (this file is the only one that
  // does): its status when final at once (the usual case); else nullopt,
  // having asked when_waiting for the callback that gets it (Recorder::Submit).
  std::optional<Status> Submit(store::CallRecord&& rec, std::optional<LoggedRequest> logged,
                               const std::function<Recorder::Done()>& when_waiting);

 private:
  void End(store::CallRecord& rec);  // its end: time, policy version, the latency metric

  const Services services_;
  const double t0_;
  store::CallRecord rec_;
  std::string retry_key_;
  std::optional<LoggedRequest> logged_;
  std::vector<store::CallRecord> retried_;
  bool committed_ = false;
};

}  // namespace forge::proxy
