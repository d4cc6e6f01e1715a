#include "proxy/recorder.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <chrono>


namespace forge::proxy {
namespace {

// Past this much logged but not yet in the database, calls wait for it.
constexpr size_t kMaxQueuedBytes = 256 << 20;
constexpr size_t kMaxBatch = 512;
// A batch gathers calls for this long (or until it is full): a commit costs
// the writer ~300 µs whatever it holds (the pages it dirtied, written to the
// WAL): bench-store_append's 1 KB calls cost it 33.9 µs each 32 a commit
// (what 5 ms gathers of sequential calls), 24.6 µs 512 a commit. Its CPU is
// taken from the calls' own cores: with 50 ms, the 1 KB added median fell by
// 12–24 µs.
// The call is durable in the log before its answer ends; the database, which
// readers wait for (Store::Open, /admin/drain), is at most this much behind.
constexpr auto kGatherTime = std::chrono::milliseconds(50);
// A log this long is swapped for the spare when the writer takes a batch
// that leaves nothing queued (every call of the batch is in the old log);
// once that batch is committed the old log is emptied and renamed
// (CallLog::Recycle) to be the next spare, so the pages calls copy into stay
// mapped: a new log's pages each cost a page fault to map, a quarter of the
// writer's CPU for 1 KB calls in round 19. (A log emptied in place with
// ftruncate under the appenders' lock took 1–1.4 ms with 8 MiB of 200 KB
// calls: the 200 KB p99. Swapping only when the queue was empty after a
// commit almost never happened under steady load: the log grew on.)
constexpr uint64_t kRotateBytes = 8 << 20;
constexpr int kCheckpointPages = 1000;  // SQLite's own threshold
// Below this backlog the writer may run at idle priority.
constexpr size_t kIdleBacklogBytes = 16 << 20;
// A writer that spent more than this of its own CPU on each call of its last
// batch runs the next at idle priority; below it, under SCHED_BATCH.
constexpr auto kLongCallWork = std::chrono::microseconds(100);

// Two ways to keep the writer's batches out of the calls' way, each right for
// one kind of call:
// - SCHED_IDLE: the kernel runs the thread only on a core nothing else wants,
//   and takes the core back the moment a call's thread is woken. With two
//   cores the writer's batch otherwise slowed whichever long call shared its
//   core (the p99 went from 0.3 to 1.9 ms in bench/proxy_bench.sh; 200 KB
//   calls' p99 in round 19: 0.7–0.9 ms idle, 1.4–2.3 SCHED_BATCH). But the
//   kernel counts that core as idle, so a call's every wakeup lands there and
//   preempts the writer: an interrupt and two context switches, 13–18 µs of
//   CPU a 1 KB call on this machine, more than the writer's own work on it.
// - SCHED_BATCH: a normal share of a core, but never preempting a call's
//   thread on waking, and its core is not taken for idle. For short calls
//   (1 KB added median 6–15 µs lower than at idle priority in round 19).
// Past a backlog the writer is at SCHED_BATCH whatever its calls, so a busy
// machine cannot starve it.
void SetIdlePriority(bool idle) {
  sched_param param{};
  pthread_setschedparam(pthread_self(), idle ? SCHED_IDLE : SCHED_BATCH, &param);
  // The change alone does not give the core up: a call's thread this one
  // preempted (its unlock woke the writer) waited for the next tick, 1–4 ms.
  if (idle) sched_yield();
}

std::chrono::nanoseconds ThreadCpuTime() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

// But an idle-priority thread must not hold what a call's thread can wait
// for: preempted holding the appenders' lock, or freeing a call's memory
// (glibc's malloc then locked the arena of the io thread that allocated it;
// tcmalloc moves a full thread cache to lists every thread takes, under
// their locks), it stalled that io thread until a core fell idle: 1–4.5 ms
// waits in futex (perf trace, glibc's malloc), the 200 KB p99. So at idle
// priority the writer sleeps and does its storage work holding nothing, and
// is at SCHED_BATCH while it takes the queue and frees what it committed.
class NormalPriorityInScope {
 public:
  explicit NormalPriorityInScope(bool idle) : idle_(idle) {
    if (idle_) SetIdlePriority(false);
  }
  ~NormalPriorityInScope() {
    if (idle_) SetIdlePriority(true);
  }
  NormalPriorityInScope(const NormalPriorityInScope&) = delete;
  NormalPriorityInScope& operator=(const NormalPriorityInScope&) = delete;

 private:
  bool idle_;
};

}  // namespace

bool NewThreadCanLeaveIdlePriority() {
  bool can = false;
  std::thread probe([&can] {  // a thread of its own: it stays idle if it may not leave
    sched_param param{};
    can = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) == 0 &&
          pthread_setschedparam(pthread_self(), SCHED_BATCH, &param) == 0;
  });
  probe.join();
  return can;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Result<std::unique_ptr<Recorder>> Recorder::Create(store::Store& store, Metrics& metrics, Env& env) {
  auto log = store::CallLog::Create(store.path());
  if (!log.ok()) return log.status().Prefixed("cannot create the call log");
  auto wakeup = Wakeup::Create();
  if (!wakeup.ok()) return wakeup.status().Prefixed("the store writer");
  return std::unique_ptr<Recorder>(new Recorder(store, metrics, env, std::move(*log), std::move(*wakeup)));
}

Recorder::Recorder(store::Store& store, Metrics& metrics, Env& env, std::unique_ptr<store::CallLog> log, Wakeup wakeup)
    : store_(store), metrics_(metrics), env_(env), log_(std::move(log)), wakeup_(std::move(wakeup)), thread_([this] {
        pthread_setname_np(pthread_self(), "forge-writer");
        Run();
      }) {
  StartCheckpointer();
}

void Recorder::StartCheckpointer() {
  // Its own connection: a checkpoint then never holds the writer's.
  auto own = store::Store::Open(store_.path());
  if (!own.ok()) {
    env_.Warn("WAL checkpoints stay inside commits: " + own.status().message());
    return;
  }
  checkpoint_store_ = std::move(*own);
  store_.db().HandOffCheckpoints(kCheckpointPages, [this] {
    std::lock_guard<std::mutex> lock(checkpoint_mutex_);
    checkpoint_due_ = true;
    checkpoint_wake_.notify_one();
  });
  checkpointer_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "forge-checkpnt");
    SetIdlePriority(true);
    RunCheckpoints();
  });
}

void Recorder::RunCheckpoints() {
  std::unique_lock<std::mutex> lock(checkpoint_mutex_);
  for (;;) {
    checkpoint_wake_.wait(lock, [&] { return checkpoint_due_ || checkpoint_stop_; });
    if (checkpoint_stop_) return;
    checkpoint_due_ = false;
    lock.unlock();
    Status s = checkpoint_store_->db().Checkpoint();
    if (!s.ok()) env_.Warn(s.message());
    lock.lock();
  }
}

Recorder::~Recorder() { Stop(); }

std::optional<LoggedRequest> Recorder::LogRequestText(std::string_view text, const std::string& rollout) {
  auto lock = LockForCall();
  if (stopping_) return std::nullopt;
  auto at = log_->AppendRequestText(text, rollout);
  if (!at.ok()) return std::nullopt;
  return LoggedRequest{log_generation_, *at};
}

std::optional<Status> Recorder::Submit(store::CallRecord&& call, const std::function<Done()>& when_waiting,
                                       std::optional<LoggedRequest> request) {
  auto lock = LockForCall();
  if (stopping_) return Status::Unavailable("the store writer has stopped");
  uint64_t before = log_->bytes();
  uint64_t request_text_at = request && request->log_generation == log_generation_ ? request->at : 0;
  auto logged = log_->Append(call, request_text_at);
  if (!logged.ok()) {
    metrics_.records_failed.fetch_add(1);
    return logged.status();
  }
  size_t bytes = static_cast<size_t>(logged->end - before);
  bool wait = queued_bytes_ + bytes > kMaxQueuedBytes && !queue_.empty();
  auto now = std::chrono::steady_clock::now();
  queue_.emplace_back(std::move(call), *logged, bytes, wait ? when_waiting() : nullptr, now);
  queued_bytes_ += bytes;
  queued_calls_.store(queue_.size());
  metrics_.store_queue.fetch_add(1);
  if (queue_.size() == 1) first_logged_at_.store(now);
  if (queue_.size() >= kMaxBatch || wait) flush_now_.store(true);
  if (queue_.size() == 1 || queue_.size() == kMaxBatch || wait) wakeup_.Give();
  if (wait) return std::nullopt;
  return Status::Ok();
}

std::unique_lock<std::mutex> Recorder::LockForCall() {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    call_waited_.store(true, std::memory_order_relaxed);
    lock.lock();
  }
  return lock;
}

void Recorder::GiveWayIfCallWaited() {
  // The unlock woke the call's thread onto this core, where it waits behind
  // the writer until the next tick (4 ms at 250 Hz) or until the writer
  // sleeps, while the other core may be idle (2 ms in round 23's trace).
  // Yielding lets it run now.
  if (call_waited_.exchange(false, std::memory_order_relaxed)) sched_yield();
}

void Recorder::TakeBatch(std::deque<Pending>& batch) {
  // Under the calls' lock: in O(1) when the queue fits in a batch (moving
  // 512 calls one by one held it for ~100 µs).
  if (queue_.size() <= kMaxBatch) {
    batch.swap(queue_);
    return;
  }
  while (batch.size() < kMaxBatch) {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

void Recorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return;
    stopped_ = stopping_ = true;
    flush_now_.store(true);
    wakeup_.Give();
  }
  if (thread_.joinable()) thread_.join();
  if (checkpointer_.joinable()) {
    store_.db().HandOffCheckpoints(0, nullptr);
    {
      std::lock_guard<std::mutex> lock(checkpoint_mutex_);
      checkpoint_stop_ = true;
      checkpoint_wake_.notify_one();
    }
    checkpointer_.join();
  }
  if (spare_) {
    if (Status s = spare_->Remove(store_); !s.ok()) env_.Warn("call log: " + s.message());
  }
  if (queue_.empty()) {
    for (auto* log : {&retiring_, &log_}) {
      if (!*log) continue;
      if (Status s = (*log)->Remove(store_); !s.ok()) env_.Warn("call log: " + s.message());
    }
  } else {
    std::string logs = retiring_ ? retiring_->path() + " and " + log_->path() : log_->path();
    env_.Warn(std::to_string(queue_.size()) + " calls stay in the call log " + logs +
              "; the next forge tool to open the store moves them into it");
  }
}

Status Recorder::Commit(std::deque<Pending>& batch, bool idle) {
  std::vector<store::CallRecord> calls;
  calls.reserve(batch.size());
  for (Pending& p : batch) calls.push_back(std::move(p.call));
  // (Only this thread replaces log_; a batch taken as the log was swapped is all in the old one.)
  store::LogMark mark = (retiring_ ? *retiring_ : *log_).MarkAt(batch.back().logged);
  Status status = store_.calls().AppendCalls(calls, &mark);
  {
    NormalPriorityInScope normal(idle);  // the calls' memory is the io threads'
    if (!status.ok()) {  // keep the calls for the next try
      for (size_t i = 0; i < batch.size(); ++i) batch[i].call = std::move(calls[i]);
    }
    calls = {};
  }
  if (!status.ok()) return status;
  metrics_.store_queue.fetch_sub(static_cast<int64_t>(batch.size()));
  auto lag = std::chrono::steady_clock::now() - batch.front().logged_at;
  metrics_.store_lag_us.store(std::chrono::duration_cast<std::chrono::microseconds>(lag).count());
  metrics_.records_written.fetch_add(static_cast<int64_t>(batch.size()));
  return status;
}

void Recorder::RecycleRetiring(bool idle) {
  // The database holds every call of the retiring log: the last batch it
  // committed was the last taken from it.
  if (retiring_->Recycle(store_).ok()) {
    spare_ = std::move(retiring_);
    return;
  }
  if (Status s = retiring_->Remove(store_); !s.ok()) env_.Warn("call log: " + s.message());
  NormalPriorityInScope normal(idle);  // the first log was made on the main thread
  retiring_.reset();
}

void Recorder::MakeSpare() {
  auto fresh = store::CallLog::Create(store_.path());
  if (!fresh.ok()) {
    env_.Warn("call log: " + fresh.status().message() + " (the current log keeps growing)");
    return;
  }
  spare_ = std::move(*fresh);
}

void Recorder::Run() {
  std::deque<Pending> batch;
  int failures = 0;
  bool idle = false;
  bool long_calls = false;  // the last batch's calls took the writer long each
  SetIdlePriority(false);
  // An unprivileged writer that went idle would stay idle for good, under any
  // backlog, holding the io threads' allocator lists there: it stays under
  // SCHED_BATCH instead.
  const bool may_idle = NewThreadCanLeaveIdlePriority();
  for (;;) {
    if (batch.empty()) {
      // (Not when a flush is due: Stop's wakeup may have ended the last
      // batch's gathering, and no other comes.)
      if (queued_calls_.load() == 0 && !flush_now_.load()) wakeup_.Wait();
      // A batch gathers from its first call for kGatherTime, or until it is
      // full, a call waits for the database, or Stop.
      while (!flush_now_.load()) {
        auto deadline = first_logged_at_.load() + kGatherTime;
        if (std::chrono::steady_clock::now() >= deadline) break;
        wakeup_.Wait(deadline);
      }
      bool want_idle;
      store::CallLog::Ahead ahead;
      {
        NormalPriorityInScope normal(idle);
        std::unique_lock<std::mutex> lock(mutex_);
        TakeBatch(batch);
        if (!batch.empty() && queue_.empty() && spare_ && log_->bytes() >= kRotateBytes) {
          retiring_ = std::move(log_);  // holds every call of the batch
          log_ = std::move(spare_);
          ++log_generation_;
        }
        ahead = log_->TakeAhead();
        queued_calls_.store(queue_.size());
        if (!queue_.empty()) first_logged_at_.store(queue_.front().logged_at);
        flush_now_.store(stopping_ || !queue_.empty());  // left over: behind, no gathering
        if (batch.empty() && stopping_) return;  // the database holds every call
        want_idle = may_idle && long_calls && queued_bytes_ < kIdleBacklogBytes && !stopping_;
        lock.unlock();
        GiveWayIfCallWaited();
      }
      if (want_idle != idle) SetIdlePriority(idle = want_idle);
      // The pages the next calls' records go to, written once here rather
      // than faulted on by an io thread. (Only this thread replaces log_.)
      store::CallLog::Prefault(ahead);
      if (batch.empty()) continue;  // a wakeup for calls an earlier batch took
    }
    auto cpu_before = ThreadCpuTime();
    Status status = Commit(batch, idle);
    long_calls = ThreadCpuTime() - cpu_before > kLongCallWork * batch.size();
    if (!status.ok()) {
      // The calls are safe in the log; the database may be busy or full for a while.
      ++failures;
      env_.Warn("store: " + status.message() + " (" + std::to_string(batch.size()) +
                " calls stay in the call log; retrying)");
      {
        NormalPriorityInScope normal(idle);
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ && failures >= 3) {
          for (auto it = batch.rbegin(); it != batch.rend(); ++it) queue_.push_front(std::move(*it));
          return;  // Stop leaves the log for the next opener of the store
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1000, 50 << std::min(failures, 5))));
      continue;
    }
    failures = 0;
    bool want_spare = false;
    {
      NormalPriorityInScope normal(idle);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const Pending& p : batch) queued_bytes_ -= p.bytes;
        want_spare = !spare_ && !retiring_ && log_->bytes() >= kRotateBytes / 2;
      }
      GiveWayIfCallWaited();
      for (Pending& p : batch) {
        if (p.done) p.done(status);
      }
      batch.clear();
    }
    if (retiring_) RecycleRetiring(idle);
    if (want_spare) MakeSpare();
  }
}

}  // namespace forge::proxy
