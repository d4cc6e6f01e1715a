// The proxy's one store writer. Calls from every connection queue here; a
// thread commits whatever has queued in one transaction (group commit) and
// then tells each call's owner, which only then sends the final bytes of its
// response. So a call the harness saw complete is always in the store.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "proxy/metrics.h"
#include "store/store.h"

namespace forge::proxy {

class Recorder {
 public:
  using Done = std::function<void(Status)>;

  Recorder(store::Store& store, Metrics& metrics, size_t max_batch = 512);
  ~Recorder();  // commits what is queued, then stops

  // Queues a call; done runs on the writer thread after the commit (or its failure).
  void Submit(store::CallRecord call, Done done);
  // Commits what is queued and stops the writer; later Submits fail at once.
  void Stop();

 private:
  struct Pending {
    store::CallRecord call;
    Done done;
    double queued_at;
  };
  void Run();

  store::Store& store_;
  Metrics& metrics_;
  size_t max_batch_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

double NowSeconds();  // wall clock, seconds since the epoch

}  // namespace forge::proxy
