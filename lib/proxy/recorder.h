// The proxy's one store writer. A call is made durable by appending it to
// the store's call log (store/call_log.h) on the caller's thread, one write
// before the final bytes of its response go out, so a call the harness saw
// complete is never lost; a thread then moves logged calls into the database
// in batches, one transaction each (group commit), off every call's path.
//
// A batch gathers for a few milliseconds, and the writer sleeps and works
// under SCHED_IDLE unless it falls behind, holding no lock a call's thread
// can want while it does (recorder.cpp says why). The queue is
// bounded: past kMaxQueuedBytes a call waits for the database like a
// synchronous commit would. WAL checkpoints run on a thread and connection
// of their own (by default SQLite runs one, milliseconds long, inside the
// commit that fills the WAL).
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "base/env.h"
#include "base/wakeup.h"
#include "proxy/metrics.h"
#include "store/call_log.h"
#include "store/store.h"

namespace forge::proxy {

// A call's request text already in the call log (Recorder::LogRequestText).
struct LoggedRequest {
  uint64_t log_generation = 0;
  uint64_t at = 0;
};

class Recorder {
 public:
  using Done = std::function<void(Status)>;

  // Creates the call log beside the store's database. Warnings go to env
  // (which must outlive the recorder).
  static Result<std::unique_ptr<Recorder>> Create(store::Store& store, Metrics& metrics, Env& env);
  ~Recorder();  // stops (see Stop)

  // Logs a call. Returns its status when that is final (logged, or failed);
  // returns nullopt when the queue is full, having asked when_waiting for the
  // callback that runs on the writer thread once the database holds the call
  // (made only then: the usual call needs none).
  // With request, the call's request text is not logged again when it is in
  // the current log (a log replaced since holds it whole).
  std::optional<Status> Submit(store::CallRecord&& call, const std::function<Done()>& when_waiting,
                               std::optional<LoggedRequest> request = std::nullopt);
  // Logs a call's request text ahead of the call, while the upstream works,
  // so that Submit's append, on the call's path, is short. nullopt if it
  // could not (Submit then logs the text with the call).
  std::optional<LoggedRequest> LogRequestText(std::string_view text, const std::string& rollout);
  // Calls logged but not yet in the database.
  int64_t pending() const { return metrics_.store_queue.load(); }
  // Moves every logged call into the database, deletes the log and stops the
  // writer; later Submits fail at once.
  void Stop();

 private:
  struct Pending {
    // (Constructed in place, in the queue: a compiler without C++20's
    // parenthesized aggregate initialization, clang before 16, needs this.)
    Pending(store::CallRecord&& call, store::LogPosition logged, size_t bytes, Done done,
            std::chrono::steady_clock::time_point logged_at)
        : call(std::move(call)), logged(logged), bytes(bytes), done(std::move(done)), logged_at(logged_at) {}
    store::CallRecord call;
    store::LogPosition logged;
    size_t bytes;
    Done done;  // set only for a call that waits for the database
    std::chrono::steady_clock::time_point logged_at;
  };
  Recorder(store::Store& store, Metrics& metrics, Env& env, std::unique_ptr<store::CallLog> log, Wakeup wakeup);
  void Run();
  // The calls' side of mutex_: a call that finds the writer holding it says
  // so, and the writer, once it lets go, gives way (GiveWayIfCallWaited).
  std::unique_lock<std::mutex> LockForCall();
  void GiveWayIfCallWaited();
  void TakeBatch(std::deque<Pending>& batch);  // into the writer's empty batch, under mutex_
  Status Commit(std::deque<Pending>& batch, bool idle);
  void RecycleRetiring(bool idle);  // makes the retired log, all in the database, the spare
  void MakeSpare();
  void StartCheckpointer();
  void RunCheckpoints();

  store::Store& store_;
  Metrics& metrics_;
  Env& env_;
  std::unique_ptr<store::CallLog> log_;
  uint64_t log_generation_ = 1;  // counts the logs: a request logged in a replaced one is gone
  // The writer's alone: the next log_ (the last one, emptied), and the log
  // replaced by log_ until the batch taken from it is committed.
  std::unique_ptr<store::CallLog> spare_;
  std::unique_ptr<store::CallLog> retiring_;
  std::mutex mutex_;  // log_, queue_ and the rest below
  std::deque<Pending> queue_;  // swapped with the writer's empty batch
  size_t queued_bytes_ = 0;
  bool stopping_ = false;
  bool stopped_ = false;
  // Set under mutex_, read by the writer without it while it gathers a batch.
  std::atomic<size_t> queued_calls_ = 0;
  std::atomic<std::chrono::steady_clock::time_point> first_logged_at_{};
  std::atomic<bool> flush_now_ = false;  // full, a call waiting, or Stop: no gathering
  std::atomic<bool> call_waited_ = false;  // a call's thread waited for mutex_ (LockForCall)
  Wakeup wakeup_;  // given by the call that starts a batch or ends its gathering
  std::thread thread_;

  std::unique_ptr<store::Store> checkpoint_store_;  // none: checkpoints stay SQLite's
  std::mutex checkpoint_mutex_;
  std::condition_variable checkpoint_wake_;
  bool checkpoint_due_ = false;
  bool checkpoint_stop_ = false;
  std::thread checkpointer_;
};

// The clocks a call is timed by.
double NowSeconds();        // wall clock, seconds since the epoch (a record's times)
double MonotonicSeconds();  // the steady clock, for latencies and deadlines

// Whether a thread the caller starts may, once at idle priority
// (SCHED_IDLE), return to SCHED_BATCH. Without CAP_SYS_NICE only if
// RLIMIT_NICE covers its nice value (sched(7)), which by default it does not.
bool NewThreadCanLeaveIdlePriority();

}  // namespace forge::proxy
