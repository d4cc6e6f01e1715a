#include "proxy/recorder.h"

#include <chrono>

#include "cli/diagnostics.h"

namespace forge::proxy {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Recorder::Recorder(store::Store& store, Metrics& metrics, size_t max_batch)
    : store_(store), metrics_(metrics), max_batch_(max_batch), thread_([this] { Run(); }) {
  StartCheckpointer();
}

void Recorder::StartCheckpointer() {
  // Its own connection: a checkpoint then never holds the writer's.
  auto own = store::Store::Open(store_.path());
  if (!own.ok()) {
    cli::Warn("WAL checkpoints stay inside commits: " + own.status().message());
    return;
  }
  checkpoint_store_ = std::move(*own);
  constexpr int kCheckpointPages = 1000;  // SQLite's own threshold
  store_.HandOffCheckpoints(kCheckpointPages, [this] {
    std::lock_guard<std::mutex> lock(checkpoint_mutex_);
    checkpoint_due_ = true;
    checkpoint_wake_.notify_one();
  });
  checkpointer_ = std::thread([this] { RunCheckpoints(); });
}

void Recorder::RunCheckpoints() {
  std::unique_lock<std::mutex> lock(checkpoint_mutex_);
  for (;;) {
    checkpoint_wake_.wait(lock, [&] { return checkpoint_due_ || checkpoint_stop_; });
    if (checkpoint_stop_) return;
    checkpoint_due_ = false;
    lock.unlock();
    Status s = checkpoint_store_->Checkpoint();
    if (!s.ok()) cli::Warn(s.message());
    lock.lock();
  }
}

Recorder::~Recorder() { Stop(); }

std::shared_ptr<EarlyRequest> Recorder::StoreRequestEarly(std::string text) {
  auto early = std::make_shared<EarlyRequest>();
  early->text = std::move(text);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stopping_) {
    queue_.push_back({std::nullopt, early, nullptr, NowSeconds()});
    wake_.notify_one();
  }
  return early;
}

std::optional<Status> Recorder::Submit(store::CallRecord call, Done done, std::shared_ptr<EarlyRequest> early) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_) {
    lock.unlock();
    done(Status::Unavailable("the store writer has stopped"));
    return std::nullopt;
  }
  metrics_.store_queue.fetch_add(1);
  if (!busy_ && queue_.empty()) {  // the writer is idle: no thread hand-off
    busy_ = true;
    lock.unlock();
    std::vector<Pending> batch;
    batch.push_back({std::move(call), std::move(early), nullptr, NowSeconds()});
    Status status = Commit(batch);
    lock.lock();
    busy_ = false;
    if (!queue_.empty()) wake_.notify_one();
    return status;
  }
  queue_.push_back({std::move(call), std::move(early), std::move(done), NowSeconds()});
  wake_.notify_one();
  return std::nullopt;
}

void Recorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  if (checkpointer_.joinable()) {
    store_.HandOffCheckpoints(0, nullptr);
    {
      std::lock_guard<std::mutex> lock(checkpoint_mutex_);
      checkpoint_stop_ = true;
      checkpoint_wake_.notify_one();
    }
    checkpointer_.join();
  }
}

Status Recorder::Commit(std::vector<Pending>& batch) {
  // Early requests first, in one transaction: calls later in this batch (or
  // in a later one) use their skeletons.
  std::vector<Pending*> early;
  for (auto& p : batch) {
    if (!p.call) early.push_back(&p);
  }
  if (!early.empty()) {
    Status stored = store_.WriteTransaction([&]() -> Status {
      for (Pending* p : early) {
        auto skeleton = store_.PutRequestText(p->early->text);
        if (!skeleton.ok()) return skeleton.status();
        p->early->skeleton = std::move(*skeleton);
      }
      return Status::Ok();
    });
    for (Pending* p : early) p->early->stored = stored.ok();
  }
  std::vector<store::CallRecord> calls;
  std::vector<Pending*> owners;
  for (auto& p : batch) {
    if (!p.call) continue;
    if (p.early && p.early->stored) {
      p.call->request_skeleton = p.early->skeleton;
    } else if (p.early) {
      p.call->request_text = std::move(p.early->text);
    }
    calls.push_back(std::move(*p.call));
    owners.push_back(&p);
  }
  if (calls.empty()) return Status::Ok();
  Status status = store_.AppendCalls(calls);
  double now = NowSeconds();
  metrics_.store_queue.fetch_sub(static_cast<int64_t>(calls.size()));
  metrics_.store_lag_us.store(static_cast<int64_t>((now - owners.front()->queued_at) * 1e6));
  if (status.ok()) {
    metrics_.records_written.fetch_add(static_cast<int64_t>(calls.size()));
  } else {
    metrics_.records_failed.fetch_add(static_cast<int64_t>(calls.size()));
  }
  return status;
}

void Recorder::Run() {
  for (;;) {
    std::vector<Pending> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return (stopping_ && !busy_) || (!queue_.empty() && !busy_); });
      if (queue_.empty()) return;  // stopping and nothing left
      while (!queue_.empty() && batch.size() < max_batch_) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      busy_ = true;
    }
    Status status = Commit(batch);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    for (auto& p : batch) {
      if (p.done) p.done(status);
    }
  }
}

}  // namespace forge::proxy
