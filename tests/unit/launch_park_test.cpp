// forge-launch with a backend that parks its runs (Backend::RunOnceParked,
// as k8s's pod-native rollouts do): a rollout's rest runs from the wake on
// the launcher's pool, a stop ends parked rollouts as cancelled, a
// transient failure after the wake is retried after a backoff timer, and
// -j bounds the rollouts in flight while the pool bounds the threads.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "launch/launcher.h"
#include "records/jsonl.h"
#include "store/store.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"
#include "forge_paths.h"

using forge::records::Json;
namespace sandbox = forge::sandbox;

namespace {

// A cluster whose sandboxes run nothing: each parked run is answered from
// the fake's own thread (the watch's, in k8s), by answer(run number), once
// `ready` says so; a stop answers it Cancelled, as a parked wait is.
class ParkingBackend : public sandbox::Backend {
 public:
  using Answer = std::function<forge::Result<sandbox::ExecResult>(int run)>;
  explicit ParkingBackend(Answer answer) : answer_(std::move(answer)), cluster_([this] { Loop(); }) {}
  ~ParkingBackend() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    changed_.notify_all();
    cluster_.join();
  }

  sandbox::BackendKind kind() const override { return sandbox::BackendKind::kLocal; }
  bool CanRunOnce() const override { return true; }
  bool ParksRunOnce() const override { return true; }
  forge::Result<std::unique_ptr<sandbox::Sandbox>> Create(const sandbox::Spec&) override {
    return forge::Status::Internal("parking backend: no exec'd sandboxes");
  }
  forge::Result<std::unique_ptr<sandbox::Sandbox>> Attach(const sandbox::Handle&) override {
    return forge::Status::Internal("parking backend: no attach");
  }
  forge::Result<int> Collect(const std::string&, int64_t) override { return 0; }

  void RunOnceParked(const sandbox::Spec&, const sandbox::OneShot& job, std::unique_ptr<sandbox::Sandbox>*,
                     const Post& post, RunDone done) override {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.insert(std::this_thread::get_id());
    max_parked_ = std::max(max_parked_, static_cast<int>(parked_.size()) + 1);
    parked_.push_back({runs_++, job.exec.cancel, post, std::move(done)});
    changed_.notify_all();
  }

  // Lets the parked runs be answered (else only a stop answers them).
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
    changed_.notify_all();
  }
  void WaitParked(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return parked_.size() >= n; });
  }
  int runs() { std::lock_guard<std::mutex> lock(mu_); return runs_; }
  int max_parked() { std::lock_guard<std::mutex> lock(mu_); return max_parked_; }
  size_t threads() { std::lock_guard<std::mutex> lock(mu_); return threads_.size(); }
  bool woken_off_cluster() { std::lock_guard<std::mutex> lock(mu_); return woken_off_cluster_; }

 private:
  struct Parked {
    int run;
    const forge::StopToken* cancel;
    Post post;
    RunDone done;
  };
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!quit_) {
      changed_.wait_for(lock, std::chrono::milliseconds(5));
      for (auto it = parked_.begin(); it != parked_.end();) {
        const bool stopped = it->cancel && it->cancel->requested();
        if (!ready_ && !stopped) { ++it; continue; }
        auto answer = stopped ? forge::Result<sandbox::ExecResult>(forge::Status::Cancelled("exec cancelled"))
                              : answer_(it->run);
        // Out of parked_ before the wake: the rollout is no longer in flight here.
        Parked p = std::move(*it);
        it = parked_.erase(it);
        const auto cluster = std::this_thread::get_id();
        p.post([this, cluster, done = std::move(p.done), answer = std::move(answer)]() mutable {
          {
            std::lock_guard<std::mutex> lock(mu_);
            threads_.insert(std::this_thread::get_id());
            if (std::this_thread::get_id() != cluster) woken_off_cluster_ = true;
          }
          done(std::move(answer));
        });
      }
    }
  }

  Answer answer_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Parked> parked_;
  int runs_ = 0, max_parked_ = 0;
  bool ready_ = false, quit_ = false, woken_off_cluster_ = false;
  std::set<std::thread::id> threads_;  // that ran a rollout's steps
  std::thread cluster_;
};

sandbox::ExecResult Exited(int code) {
  sandbox::ExecResult result;
  result.exit_code = code;
  result.stdout_data = "done\n";
  return result;
}

struct Run {
  forge::testing::TempDir dir;
  forge::testing::FakeEnv env;
  forge::launch::LaunchOptions options;
  explicit Run(int tasks) {
    std::ofstream out(dir.File("tasks.jsonl"));
    for (int i = 0; i < tasks; ++i) out << Json{{"id", "t" + std::to_string(i)}, {"instruction", "x"}}.dump() << "\n";
    options.env = &env;
    options.inputs = {dir.File("tasks.jsonl")};
    options.run_id = "park-run";
    options.command = "true";
    options.harness_dir = std::string(FORGE_SOURCE_DIR) + "/harnesses";
    options.infra_retries = 0;
    options.backoff_seconds = 0.05;
  }
  forge::Status Launch(sandbox::Backend& backend) {
    auto store = forge::store::Store::Open(dir.File("forge.db"));
    REQUIRE(store.ok());
    auto out = forge::records::JsonlWriter::Create(dir.File("rollouts.jsonl"));
    REQUIRE(out.ok());
    return forge::launch::Launch(options, backend, **store, **out);
  }
  std::vector<Json> Records() {
    std::vector<Json> records;
    std::ifstream in(dir.File("rollouts.jsonl"));
    for (std::string line; std::getline(in, line);) records.push_back(Json::parse(line));
    return records;
  }
};

}  // namespace

TEST_CASE("parked runs: completed from the wake; -j bounds those in flight, the pool the threads") {
  ParkingBackend backend([](int) { return Exited(0); });
  Run run(300);
  run.options.jobs = 100;
  std::thread release([&] {
    backend.WaitParked(100);  // all -j parked at once, on fewer threads
    backend.Release();
  });
  forge::Status launched = run.Launch(backend);
  release.join();
  CHECK(launched.ok());
  auto records = run.Records();
  REQUIRE(records.size() == 300);
  for (const Json& r : records) {
    INFO(r.dump());
    CHECK(r["outcome"] == "ok");
    CHECK(r["infra_retries"] == 0);
    CHECK(r["timings"].contains("total"));
  }
  CHECK(backend.runs() == 300);
  CHECK(backend.max_parked() == 100);  // never more than -j, and -j reached
  CHECK(backend.threads() <= 64);      // the pool's 64 threads ran every step
  CHECK(backend.woken_off_cluster());
}

TEST_CASE("parked runs: a stop ends every parked rollout as cancelled, with its record") {
  ParkingBackend backend([](int) { return Exited(0); });  // never released: only the stop answers
  Run run(12);
  run.options.jobs = 8;
  std::thread stop([&] {
    backend.WaitParked(8);
    run.env.stop().Request(SIGINT);
  });
  forge::Status launched = run.Launch(backend);
  stop.join();
  CHECK(launched.Is(forge::Kind::kCancelled));
  auto records = run.Records();
  CHECK(records.size() == 8);  // the 4 never started have no record
  for (const Json& r : records) {
    INFO(r.dump());
    CHECK(r["outcome"] == "cancelled");
    CHECK(r["error"] == "stopped by signal");
  }
  auto store = forge::store::Store::Open(run.dir.File("forge.db"));
  REQUIRE(store.ok());
  auto rows = (*store)->rollouts().OfRun("park-run");
  REQUIRE(rows.ok());
  CHECK(rows->size() == 8);
  for (const auto& row : *rows) CHECK(row.status == "cancelled");
}

TEST_CASE("parked runs: a transient failure after the wake is retried after a backoff, one attempt") {
  ParkingBackend backend([](int run) -> forge::Result<sandbox::ExecResult> {
    if (run == 0) return forge::Status::Unavailable("pod p: evicted (the node ran out of memory)");
    return Exited(0);
  });
  backend.Release();
  Run run(1);
  run.options.infra_retries = 3;
  CHECK(run.Launch(backend).ok());
  auto records = run.Records();
  REQUIRE(records.size() == 1);
  INFO(records[0].dump());
  CHECK(records[0]["outcome"] == "ok");
  CHECK(records[0]["attempt"] == 0);
  CHECK(records[0]["infra_retries"] == 1);
  CHECK(backend.runs() == 2);
  auto warnings = run.env.Texts("warning");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("evicted") != std::string::npos);
  CHECK(warnings[0].find("retrying in") != std::string::npos);
}

TEST_CASE("parked runs: a stop during a backoff ends the rollout cancelled, with its last try's record") {
  ParkingBackend backend([](int) -> forge::Result<sandbox::ExecResult> {
    return forge::Status::Unavailable("pod p: evicted (the node ran out of memory)");
  });
  backend.Release();
  Run run(1);
  run.options.infra_retries = 3;
  run.options.backoff_seconds = 30;  // a backoff of 15 s or more, hurried by the stop
  std::thread stop([&] {
    for (int i = 0; i < 2000 && run.env.Texts("warning").empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    run.env.stop().Request(SIGINT);
  });
  forge::Status launched = run.Launch(backend);
  stop.join();
  CHECK(launched.Is(forge::Kind::kCancelled));
  auto records = run.Records();
  REQUIRE(records.size() == 1);
  INFO(records[0].dump());
  CHECK(records[0]["outcome"] == "cancelled");
  CHECK(records[0]["infra_retries"] == 1);
  const std::string error = records[0]["error"];
  CHECK(error.find("during a backoff") != std::string::npos);
  CHECK(error.find("evicted") != std::string::npos);
  CHECK_FALSE(records[0].contains("transient"));
  // The last try's phases, not an empty record of a try that never ran.
  CHECK(records[0]["timings"].size() > 1);
  CHECK(backend.runs() == 1);
}
