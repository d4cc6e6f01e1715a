#include <doctest/doctest.h>
#include <dirent.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "proxy/recorder.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/fake_env.h"

using forge::store::CallRecord;

namespace {

// The call logs beside the database, as (name, bytes).
std::vector<std::pair<std::string, long>> Logs(const std::string& dir) {
  std::vector<std::pair<std::string, long>> logs;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    if (!std::strstr(e->d_name, "-calls-")) continue;
    struct stat st {};
    stat((dir + "/" + e->d_name).c_str(), &st);
    logs.emplace_back(e->d_name, static_cast<long>(st.st_size));
  }
  closedir(d);
  return logs;
}

// A chat call whose one user message is `content`.
CallRecord ChatCall(const std::string& rollout, const std::string& content) {
  CallRecord call;
  call.rollout_id = rollout;
  call.client_format = "openai-chat";
  call.request_text = R"({"messages":[{"role":"user","content":")" + content + R"("}]})";
  call.response_text = R"({"choices":[]})";
  call.http_status = 200;
  return call;
}

forge::proxy::Recorder::Done IgnoreDone() {
  return [](forge::Status) {};
}

// A store in a folder of its own and a recorder writing to it (destroyed in
// that order reversed: the recorder stops first).
struct Recording {
  forge::testing::TempDir dir;
  std::unique_ptr<forge::store::Store> store;
  forge::proxy::Metrics metrics;
  forge::testing::FakeEnv env;
  std::unique_ptr<forge::proxy::Recorder> recorder;
  Recording() {
    auto opened = forge::store::Store::Open(dir.File("forge.db"));
    REQUIRE_MESSAGE(opened.ok(), opened.status().message());
    store = std::move(*opened);
    auto made = forge::proxy::Recorder::Create(*store, metrics, env);
    REQUIRE_MESSAGE(made.ok(), made.status().message());
    recorder = std::move(*made);
  }
};

}  // namespace

TEST_CASE("the recorder moves logged calls into the database and keeps its log small") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  auto store = forge::store::Store::Open(db);
  REQUIRE(store.ok());
  forge::proxy::Metrics metrics;
  forge::testing::FakeEnv env;
  auto recorder = forge::proxy::Recorder::Create(**store, metrics, env);
  REQUIRE_MESSAGE(recorder.ok(), recorder.status().message());
  // 60 calls of 200 KB: past the size at which a taken log is replaced.
  constexpr int kCalls = 60;
  for (int i = 0; i < kCalls; ++i) {
    auto logged = (*recorder)->Submit(ChatCall("r", std::to_string(i) + std::string(200000, 'x')), IgnoreDone);
    REQUIRE(logged.has_value());
    REQUIRE(logged->ok());
    if (i % 10 == 9) {  // let the writer catch up now and then, as between a harness's calls
      for (int wait = 0; wait < 2000 && (*recorder)->pending() > 0; ++wait) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  for (int wait = 0; wait < 5000 && (*recorder)->pending() > 0; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(metrics.records_written.load() == kCalls);
  // The writer replaces a taken log after its last commit (a moment after
  // pending() reaches 0) with the one before it, emptied: two logs, one
  // holding the records since, the other none.
  // (A log's file is allocated 16 MiB at a time: its records are what count.)
  auto records_ends = [&] {
    std::vector<uint64_t> ends;
    auto scans = forge::store::ScanCallLogs(db);
    if (scans.ok()) {
      for (const auto& scan : *scans) ends.push_back(scan.end);
    }
    std::sort(ends.begin(), ends.end());
    return ends;
  };
  auto replaced = [&] {
    auto ends = records_ends();
    return ends.size() == 2 && ends[0] == 8 && ends[1] < 9L * 1024 * 1024;
  };
  for (int wait = 0; wait < 2000 && !replaced(); ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto ends = records_ends();
  REQUIRE(ends.size() == 2);
  CHECK(ends[0] == 8);  // the spare: only its 8-byte header
  CHECK(ends[1] < 9L * 1024 * 1024);  // 60 × 200 KB = 12 MB were appended in all
  CHECK(Logs(dir.path().string()).size() == 2);
  auto calls = (*store)->calls().CallsOfRollout("r");
  REQUIRE(calls.ok());
  REQUIRE(calls->size() == kCalls);
  CHECK((*calls)[59].request["messages"][0]["content"].get<std::string>().substr(0, 2) == "59");
  (*recorder)->Stop();
  CHECK(Logs(dir.path().string()).empty());  // a clean stop leaves no log
}

TEST_CASE("the recorder takes calls from several threads in batches and Stop commits what is queued") {
  Recording r;
  // Two threads, 700 calls each, without pause: more than one batch (512)
  // is queued at once, so batches start without waiting for a wakeup.
  constexpr int kPerThread = 700;
  auto submit = [&](const std::string& rollout) {
    for (int i = 0; i < kPerThread; ++i) {
      CallRecord call = ChatCall(rollout, std::to_string(i));
      call.seq = i;
      auto logged = r.recorder->Submit(std::move(call), IgnoreDone);
      REQUIRE(logged.has_value());
      REQUIRE(logged->ok());
    }
  };
  std::thread a(submit, "a"), b(submit, "b");
  a.join();
  b.join();
  r.recorder->Stop();  // whatever is still queued goes in before it returns
  CHECK(r.metrics.records_written.load() == 2 * kPerThread);
  CHECK(r.recorder->pending() == 0);
  for (const char* rollout : {"a", "b"}) {
    auto calls = r.store->calls().CallsOfRollout(rollout);
    REQUIRE(calls.ok());
    REQUIRE(calls->size() == kPerThread);
    for (int i = 0; i < kPerThread; ++i) {  // in the order each thread logged them
      REQUIRE((*calls)[static_cast<size_t>(i)].seq == i);
    }
  }
  CHECK(Logs(r.dir.path().string()).empty());
  auto late = r.recorder->Submit(ChatCall("a", "late"), IgnoreDone);
  REQUIRE(late.has_value());
  CHECK(!late->ok());  // stopped: fails at once
}

TEST_CASE("the recorder stops when Stop comes while a batch gathers") {
  // Stop's wakeup ends the gathering of the batch of the call logged just
  // before; the writer must then see that it is stopping and not wait for a
  // wakeup that will never come (forge-proxy hung on SIGTERM after a call).
  for (int round = 0; round < 20; ++round) {
    Recording r;
    auto logged = r.recorder->Submit(ChatCall("r", "one"), IgnoreDone);
    REQUIRE(logged.has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // within the batch's 50 ms of gathering
    std::atomic<bool> stopped{false};
    std::thread stop([&] {
      r.recorder->Stop();
      stopped = true;
    });
    for (int i = 0; i < 500 && !stopped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE_MESSAGE(stopped.load(), "Stop did not return within 5 s (round " << round << ")");
    stop.join();
    CHECK(r.metrics.records_written.load() == 1);
  }
}

namespace {

// The scheduling policy of this process's thread named `name`, or -1.
int PolicyOfThread(const std::string& name) {
  DIR* d = opendir("/proc/self/task");
  int policy = -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    FILE* f = std::fopen(("/proc/self/task/" + std::string(e->d_name) + "/comm").c_str(), "r");
    if (!f) continue;
    char comm[64] = {};
    bool named = std::fgets(comm, sizeof comm, f) && std::string(comm) == name + "\n";
    std::fclose(f);
    if (named) policy = sched_getscheduler(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  closedir(d);
  return policy;
}

bool WaitForPolicy(const std::string& thread, int policy) {
  for (int wait = 0; wait < 2000; ++wait) {
    if (PolicyOfThread(thread) == policy) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Up to 10 s for the writer to commit what is queued.
void WaitForCommits(Recording& r) {
  for (int wait = 0; wait < 10000 && r.recorder->pending() > 0; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void SubmitAndWait(Recording& r, std::vector<CallRecord> calls) {
  for (CallRecord& call : calls) {
    auto logged = r.recorder->Submit(std::move(call), IgnoreDone);
    REQUIRE(logged.has_value());
    REQUIRE(logged->ok());
  }
  WaitForCommits(r);
  REQUIRE(r.recorder->pending() == 0);
}

std::vector<CallRecord> ShortCalls(int n) {
  std::vector<CallRecord> calls;
  for (int i = 0; i < n; ++i) calls.push_back(ChatCall("short", std::to_string(i)));
  return calls;
}

// Calls of 1 MB of letters that do not compress: milliseconds of the
// writer's CPU each.
std::vector<CallRecord> LongCalls(int n) {
  std::vector<CallRecord> calls;
  uint64_t state = 88172645463325252ull;
  for (int i = 0; i < n; ++i) {
    std::string text(1 << 20, ' ');
    for (char& c : text) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      c = static_cast<char>('a' + state % 26);
    }
    calls.push_back(ChatCall("long", text));
  }
  return calls;
}

// Takes CAP_SYS_NICE out of the calling thread's effective capabilities (a
// thread's own; those it starts inherit them): what an unprivileged proxy has.
bool DropSysNice() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  data[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
  return syscall(SYS_capset, &header, data) == 0;
}

}  // namespace

TEST_CASE("the store writer runs under SCHED_BATCH, and at idle priority after calls long to record" *
          doctest::test_suite("host")) {
  if (!forge::proxy::NewThreadCanLeaveIdlePriority()) {
    FORGE_SKIP("this process may not leave idle priority (no CAP_SYS_NICE, RLIMIT_NICE below 20)");
  }
  Recording r;
  REQUIRE(WaitForPolicy("forge-writer", SCHED_BATCH));
  SubmitAndWait(r, ShortCalls(300));
  CHECK(PolicyOfThread("forge-writer") == SCHED_BATCH);  // a few µs of its CPU each
  SubmitAndWait(r, LongCalls(8));
  SubmitAndWait(r, ShortCalls(1));  // taken after the long batch: at idle priority
  CHECK(WaitForPolicy("forge-writer", SCHED_IDLE));
  SubmitAndWait(r, ShortCalls(300));  // short again...
  SubmitAndWait(r, ShortCalls(300));  // ...so the batch after it is back under SCHED_BATCH
  CHECK(WaitForPolicy("forge-writer", SCHED_BATCH));
  auto calls = r.store->calls().CallsOfRollout("long");
  REQUIRE(calls.ok());
  CHECK(calls->size() == 8);
}

TEST_CASE("a writer that could not leave idle priority never takes it") {
  // Without CAP_SYS_NICE and with RLIMIT_NICE at 0 (the default), a thread
  // at SCHED_IDLE may not return to SCHED_BATCH: a writer that went idle for
  // long calls stayed idle for good.
  rlimit nice_limit{};
  REQUIRE(getrlimit(RLIMIT_NICE, &nice_limit) == 0);
  rlimit no_nice = nice_limit;
  no_nice.rlim_cur = 0;
  REQUIRE(setrlimit(RLIMIT_NICE, &no_nice) == 0);
  std::unique_ptr<Recording> r;
  bool dropped = false, left_idle = true;
  std::thread unprivileged([&] {
    dropped = DropSysNice();
    left_idle = forge::proxy::NewThreadCanLeaveIdlePriority();  // what the kernel allows such a thread: no
    r = std::make_unique<Recording>();  // its writer inherits this thread's capabilities
  });
  unprivileged.join();
  REQUIRE(dropped);
  CHECK_FALSE(left_idle);
  REQUIRE(WaitForPolicy("forge-writer", SCHED_BATCH));
  SubmitAndWait(*r, LongCalls(8));
  SubmitAndWait(*r, ShortCalls(1));  // the batch a privileged writer takes at idle priority
  CHECK(PolicyOfThread("forge-writer") == SCHED_BATCH);
  SubmitAndWait(*r, ShortCalls(300));
  SubmitAndWait(*r, ShortCalls(300));
  CHECK(PolicyOfThread("forge-writer") == SCHED_BATCH);
  auto calls = r->store->calls().CallsOfRollout("long");
  REQUIRE(calls.ok());
  CHECK(calls->size() == 8);
  r.reset();
  REQUIRE(setrlimit(RLIMIT_NICE, &nice_limit) == 0);
}

TEST_CASE("under steady calls the writer swaps a long log for an emptied one without waiting for a lull") {
  Recording r;
  // ~3 KB records arriving steadily, each batch taken while the next calls
  // arrive: its queue is never empty after a commit, only right after a take.
  constexpr int kCalls = 12000;
  std::string text(2500, 'x');
  uint64_t longest = 0;  // the most records a log held while the calls came
  for (int i = 0; i < kCalls; ++i) {
    auto logged = r.recorder->Submit(ChatCall("steady", std::to_string(i) + text), IgnoreDone);
    REQUIRE(logged.has_value());
    REQUIRE(logged->ok());
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    if (i % 1000 == 999) {
      auto scans = forge::store::ScanCallLogs(r.dir.File("forge.db"));
      REQUIRE(scans.ok());
      for (const auto& scan : *scans) longest = std::max(longest, scan.end);
    }
  }
  CHECK(longest < 12ull << 20);  // swapped at 8 MiB, not grown to ~31 MB
  WaitForCommits(r);
  CHECK(r.metrics.records_written.load() == kCalls);
  // 12,000 × ~2.6 KB = ~31 MB appended; no log holds more than a swap's worth.
  auto scans = forge::store::ScanCallLogs(r.dir.File("forge.db"));
  REQUIRE(scans.ok());
  CHECK(scans->size() <= 3);  // the current log, the spare, and one retiring
  uint64_t appended = 0;
  for (const auto& scan : *scans) {
    CHECK(scan.end < 12ull << 20);
    appended += scan.end;
  }
  CHECK(appended < 20ull << 20);
  auto calls = r.store->calls().CallsOfRollout("steady");
  REQUIRE(calls.ok());
  CHECK(calls->size() == kCalls);
  r.recorder->Stop();
  CHECK(Logs(r.dir.path().string()).empty());
}
