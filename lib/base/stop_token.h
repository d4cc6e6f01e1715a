// A request to stop, made once and seen by every thread that polls or waits
// on it: the process's (SIGINT/SIGTERM, set by lib/cli's signal handler), or a
// stage's own (its output went away), which also sees its parent's.
//
// Waiting costs nothing while nobody stops: WaitFor sleeps in the kernel on an
// eventfd that a request makes readable for good (it is never read), so any
// number of threads wake at once, and a loop that must also do something every
// second (redraw a progress line) waits for a second, not in 50 ms slices.
#pragma once

#include <atomic>
#include <chrono>

namespace forge {

class StopToken {
 public:
  // A token of its own; with a parent, it is also stopped whenever the parent
  // is (the parent must outlive it).
  explicit StopToken(const StopToken* parent = nullptr);
  ~StopToken();
  StopToken(const StopToken&) = delete;
  StopToken& operator=(const StopToken&) = delete;

  // Asks to stop; the first reason wins (a signal number, or kByCaller).
  // Async-signal-safe: an atomic store and a write(2).
  void Request(int reason = kByCaller) noexcept;
  static constexpr int kByCaller = -1;

  // Whether this token or its parent was asked to stop.
  bool requested() const;
  // The reason of the first request (this token's, else its parent's), or 0.
  int reason() const;

  // Returns at once when a stop was requested, else sleeps until one is or
  // `timeout` has passed; true when a stop was requested.
  bool WaitFor(std::chrono::duration<double> timeout) const;

  // Tests only: forgets a request, so one process can test stops again.
  void ResetForTesting();

 private:
  const StopToken* parent_;
  std::atomic<int> reason_{0};
  int fd_ = -1;  // eventfd, readable once requested; -1: WaitFor polls reason_
};

}  // namespace forge
