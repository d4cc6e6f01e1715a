#include "proxy/recorder.h"

#include <chrono>

namespace forge::proxy {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Recorder::Recorder(store::Store& store, Metrics& metrics, size_t max_batch)
    : store_(store), metrics_(metrics), max_batch_(max_batch), thread_([this] { Run(); }) {}

Recorder::~Recorder() { Stop(); }

void Recorder::Submit(store::CallRecord call, Done done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back({std::move(call), std::move(done), NowSeconds()});
      metrics_.store_queue.fetch_add(1);
      wake_.notify_one();
      return;
    }
  }
  done(Status::Unavailable("the store writer has stopped"));
}

void Recorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void Recorder::Run() {
  for (;;) {
    std::vector<Pending> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left
      while (!queue_.empty() && batch.size() < max_batch_) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::vector<store::CallRecord> calls;
    calls.reserve(batch.size());
    for (auto& p : batch) calls.push_back(std::move(p.call));
    Status status = store_.AppendCalls(calls);
    double now = NowSeconds();
    metrics_.store_queue.fetch_sub(static_cast<int64_t>(batch.size()));
    metrics_.store_lag_us.store(static_cast<int64_t>((now - batch.front().queued_at) * 1e6));
    if (status.ok()) {
      metrics_.records_written.fetch_add(static_cast<int64_t>(batch.size()));
    } else {
      metrics_.records_failed.fetch_add(static_cast<int64_t>(batch.size()));
    }
    for (auto& p : batch) p.done(status);
  }
}

}  // namespace forge::proxy
