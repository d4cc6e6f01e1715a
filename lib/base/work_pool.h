// A fixed set of threads that run posted steps, now or after a delay: the
// steps of many waits parked as state (a rollout waiting on its pod) run
// here instead of each wait holding a thread of its own.
//
//   WorkPool pool(4, [&] { return stop.requested(); });
//   pool.Post([] { ... });                       // on one of the 4 threads
//   pool.PostAfter(1.5, [] { ... });             // a timer; hurried by a stop
//   pool.Drain();                                // joins once all are run
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace forge {

class WorkPool {
 public:
  using Step = std::function<void()>;
  using Clock = std::chrono::steady_clock;

  // hurry (may be empty): while true, timers are due at once (a stop ends
  // a backoff); it is asked at least every kHurryPoll while timers wait.
  WorkPool(int threads, std::function<bool()> hurry);
  ~WorkPool();  // Drain()
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  void Post(Step step);
  void PostAfter(double seconds, Step step);
  // Runs what is posted until nothing is queued, timed or running and
  // Close was called; then joins the threads.
  void Drain();
  // No more work will come from outside the pool: once idle, it ends.
  void Close();

  int threads() const { return static_cast<int>(threads_.size()); }
  // The most steps that ran at once (a test's check of the bound).
  int busiest();

  static constexpr std::chrono::milliseconds kHurryPoll{100};

 private:
  void Loop();
  bool Idle() const { return queue_.empty() && timers_.empty() && running_ == 0; }
  // Moves due timers to the queue (mu_ held).
  void Due(Clock::time_point now);

  std::function<bool()> hurry_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Step> queue_;
  std::multimap<Clock::time_point, Step> timers_;
  int running_ = 0;
  int busiest_ = 0;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace forge
