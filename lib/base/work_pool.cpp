#include "base/work_pool.h"

#include <algorithm>

namespace forge {

WorkPool::WorkPool(int threads, std::function<bool()> hurry) : hurry_(std::move(hurry)) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Loop(); });
}

WorkPool::~WorkPool() {
  Close();
  Drain();
}

void WorkPool::Post(Step step) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(step));
  changed_.notify_one();
}

void WorkPool::PostAfter(double seconds, Step step) {
  const auto at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::lock_guard<std::mutex> lock(mu_);
  timers_.emplace(at, std::move(step));
  changed_.notify_one();
}

void WorkPool::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  changed_.notify_all();
}

void WorkPool::Drain() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

int WorkPool::busiest() {
  std::lock_guard<std::mutex> lock(mu_);
  return busiest_;
}

void WorkPool::Due(Clock::time_point now) {
  const bool hurried = hurry_ && hurry_();
  while (!timers_.empty() && (hurried || timers_.begin()->first <= now)) {
    queue_.push_back(std::move(timers_.begin()->second));
    timers_.erase(timers_.begin());
  }
}

void WorkPool::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Due(Clock::now());
    if (!queue_.empty()) {
      Step step = std::move(queue_.front());
      queue_.pop_front();
      busiest_ = std::max(busiest_, ++running_);
      lock.unlock();
      step();
      step = nullptr;  // what it captured goes before the count says idle
      lock.lock();
      if (--running_ == 0 && closed_ && Idle()) changed_.notify_all();
      continue;
    }
    if (closed_ && Idle()) return;
    if (timers_.empty()) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, std::min(timers_.begin()->first, Clock::now() + kHurryPoll));
    }
  }
}

}  // namespace forge
