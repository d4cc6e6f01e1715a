// The proxy's one store writer. Calls from every connection queue here; a
// thread commits whatever has queued in one transaction (group commit) and
// then tells each call's owner, which only then sends the final bytes of its
// response. So a call the harness saw complete is always in the store.
//
// Three things keep work off a call's critical path: when the writer is
// idle, a call is committed at once on the caller's thread (no thread
// hand-off for a lone call); a big request's content can be stored ahead,
// while the upstream is still answering, so the final commit is small; and
// WAL checkpoints run on a thread and connection of their own (by default
// SQLite runs one, milliseconds long, inside the commit that fills the WAL).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "proxy/metrics.h"
#include "store/store.h"

namespace forge::proxy {

// A request's content stored ahead of its call (Store::PutRequestText).
struct EarlyRequest {
  std::string text;      // the request's JSON text (given back to the call if storing failed)
  std::string skeleton;  // set by the writer once stored
  bool stored = false;
};

class Recorder {
 public:
  using Done = std::function<void(Status)>;

  Recorder(store::Store& store, Metrics& metrics, size_t max_batch = 512);
  ~Recorder();  // commits what is queued, then stops

  // Queues the request's content to be stored now; pass the handle to Submit.
  std::shared_ptr<EarlyRequest> StoreRequestEarly(std::string text);
  // Commits a call. When the writer is idle and nothing is queued, commits on
  // this thread and returns the status (done is not called); else queues it
  // and returns nullopt, and done runs on the writer thread after the commit.
  std::optional<Status> Submit(store::CallRecord call, Done done, std::shared_ptr<EarlyRequest> early = nullptr);
  // Commits what is queued and stops the writer; later Submits fail at once.
  void Stop();

 private:
  struct Pending {
    std::optional<store::CallRecord> call;  // none: an early request
    std::shared_ptr<EarlyRequest> early;
    Done done;
    double queued_at;
  };
  void Run();
  Status Commit(std::vector<Pending>& batch);
  void StartCheckpointer();
  void RunCheckpoints();

  store::Store& store_;
  Metrics& metrics_;
  size_t max_batch_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> queue_;
  bool busy_ = false;  // a commit is running (on the writer or a caller's thread)
  bool stopping_ = false;
  std::thread thread_;

  std::unique_ptr<store::Store> checkpoint_store_;  // none: checkpoints stay SQLite's
  std::mutex checkpoint_mutex_;
  std::condition_variable checkpoint_wake_;
  bool checkpoint_due_ = false;
  bool checkpoint_stop_ = false;
  std::thread checkpointer_;
};

double NowSeconds();  // wall clock, seconds since the epoch

}  // namespace forge::proxy
