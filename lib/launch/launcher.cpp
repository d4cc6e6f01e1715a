#include "launch/launcher.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "base/hash.h"
#include "cli/diagnostics.h"
#include "cli/progress.h"
#include "cli/signals.h"
#include "launch/harness.h"
#include "launch/task_input.h"
#include "tasks/load.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/k8s/k8s_backend.h"
#include "sandbox/local/local_backend.h"

namespace forge::launch {
namespace {

namespace fs = std::filesystem;
using Json = records::Json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point from) {
  return std::round(std::chrono::duration<double>(Clock::now() - from).count() * 1000) / 1000;
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Attempts that need no rerun: the harness ran and its outcome is known.
bool IsFinalOutcome(const std::string& outcome) {
  return outcome == "ok" || outcome == "agent_timeout" || outcome == "agent_error";
}

bool IsRetryable(const Status& status) {
  switch (status.code()) {
    case ExitCode::kUnavailable:
    case ExitCode::kTempFail:
    case ExitCode::kIoErr:
    case ExitCode::kProtocol:
      return true;
    default:
      return false;
  }
}

std::string Tail(const std::string& text, size_t max) {
  return text.size() <= max ? text : text.substr(text.size() - max);
}

// Host-side scratch for files copied into a sandbox; removed on destruction.
class Scratch {
 public:
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/forge-launch-XXXXXX";
    if (mkdtemp(pattern.data())) dir_ = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // Writes content as <scratch>/<n>/<name> and returns that path.
  Result<std::string> Write(const std::string& name, const std::string& content) {
    if (dir_.empty()) return Status::CantCreate("cannot create a scratch directory");
    std::string sub = dir_ + "/" + std::to_string(counter_++);
    std::error_code ec;
    fs::create_directories(sub, ec);
    std::string path = sub + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << content;
    if (!out) return Status::CantCreate(path + ": write failed");
    return path;
  }

 private:
  std::string dir_;
  int counter_ = 0;
};

struct Job {
  const TaskSpec* task;
  int attempt;
};

class Launcher {
 public:
  Launcher(const LaunchOptions& options, sandbox::Backend& backend, store::Store& store,
           records::JsonlWriter& out)
      : options_(options), backend_(backend), store_(store), out_(out) {}

  Status Run();

 private:
  Json RunRollout(const Job& job);
  // One try: create, set up, run the harness, hold or release. Returns the
  // Status of the infrastructure; the harness's own result goes in record.
  Status TryOnce(const Job& job, const HarnessProfile& profile, const std::string& rollout_id,
                 Json& record);
  Result<const HarnessProfile*> Profile(const std::string& name);
  // Absolute, since the docker engine binds only absolute host paths.
  std::string HarnessInstallDir() const {
    std::error_code ec;
    fs::path dir = fs::absolute(options_.harness_install_dir.empty() ? DefaultHarnessInstallDir()
                                                                     : options_.harness_install_dir,
                                ec);
    return dir.lexically_normal().string();
  }
  Status Emit(const Json& record);
  void UpdateProgress();

  const LaunchOptions& options_;
  sandbox::Backend& backend_;
  store::Store& store_;
  records::JsonlWriter& out_;
  std::atomic<bool> cancel_{false};
  std::mutex mutex_;  // guards the fields below
  std::map<std::string, HarnessProfile> profiles_;
  Status output_status_;
  std::unique_ptr<cli::Progress> progress_;
  int running_ = 0, ok_ = 0, failed_ = 0, infra_ = 0;
};

Result<const HarnessProfile*> Launcher::Profile(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = profiles_.find(name);
  if (it != profiles_.end()) return &it->second;
  auto profile = LoadHarness(options_.harness_dir.empty() ? DefaultHarnessDir() : options_.harness_dir, name);
  if (!profile.ok()) return profile.status();
  if (UsesPlaceholder(*profile, "harnesses")) {
    // Checked once here, not by every rollout failing to exec a missing binary.
    const std::string dir = HarnessInstallDir();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return Status::Config("harness " + name + " runs from {harnesses} = " + dir +
                            ", which is not a directory: run scripts/install-harnesses.sh or "
                            "pass --harness-install-dir");
    }
  }
  return &profiles_.emplace(name, std::move(*profile)).first->second;
}

Status Launcher::Emit(const Json& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!output_status_.ok() || output_status_.output_closed()) return output_status_;
  output_status_ = out_.Write(record);
  return output_status_;
}

void Launcher::UpdateProgress() {
  if (!progress_) return;
  progress_->SetDetail(fmt::format("{} running, {} ok, {} failed, {} infra errors", running_, ok_,
                                   failed_, infra_));
}

Status Launcher::TryOnce(const Job& job, const HarnessProfile& profile,
                         const std::string& rollout_id, Json& record) {
  const TaskSpec& task = *job.task;
  Json& timings = record["timings"];
  auto phase_start = Clock::now();

  // The secret is born here and leaves only in the harness's environment:
  // the store keeps its hash, the record never sees it.
  const std::string secret = "forge-" + RandomHex(24);
  store::RolloutRow row;
  row.id = rollout_id;
  row.run_id = options_.run_id;
  row.task_id = task.id;
  row.attempt = job.attempt;
  row.harness = profile.name;
  row.secret_hash = Sha256Hex(secret);
  row.status = "running";
  FORGE_RETURN_IF_ERROR(store_.RegisterRollout(row).Prefixed("store"));

  sandbox::Spec spec;
  spec.run_id = options_.run_id;
  spec.rollout_id = rollout_id;
  spec.image = task.image.empty() && task.build_context.empty() ? options_.image : task.image;
  spec.build_context = task.image.empty() ? task.build_context : "";
  spec.limits.cpus = task.cpus.value_or(options_.cpus);
  spec.limits.memory_bytes = task.memory_bytes.value_or(options_.memory_bytes);
  spec.limits.pids = task.pids.value_or(options_.pids);
  std::string network = options_.network.empty() ? (options_.proxy.empty() ? "none" : "host")
                                                  : options_.network;
  if (task.allow_internet && !*task.allow_internet && network == "host" && options_.proxy.empty()) {
    network = "none";
  }
  spec.network = network == "host" ? sandbox::NetworkPolicy::kHost
                 : network == "loopback" ? sandbox::NetworkPolicy::kLoopback
                                         : sandbox::NetworkPolicy::kNone;
  spec.labels = {{"forge.task", task.id.substr(0, 63)}, {"forge.attempt", std::to_string(job.attempt)}};
  spec.workdir = options_.workdir;
  spec.user = task.user.empty() ? options_.user : task.user;
  // The real harnesses stay installed on the host; a container sees them
  // read-only at a fixed path, so nothing is fetched at rollout time.
  const bool mount_harnesses = backend_.name() == "docker" && UsesPlaceholder(profile, "harnesses");
  if (mount_harnesses) spec.mounts.push_back({HarnessInstallDir(), options_.harness_mount, true});
  const double agent_timeout =
      task.agent_timeout_seconds > 0 ? task.agent_timeout_seconds : options_.agent_timeout_seconds;
  spec.lifetime_seconds = static_cast<int64_t>(agent_timeout) + 600 +
                          (options_.hold ? options_.hold_seconds : 0);

  auto created = backend_.Create(spec);
  timings["create"] = Seconds(phase_start);
  if (!created.ok()) return created.status().Prefixed("create sandbox");
  std::unique_ptr<sandbox::Sandbox> box = std::move(*created);
  bool released = false;
  auto release = [&]() -> Status {
    if (released) return Status::Ok();
    released = true;
    auto start = Clock::now();
    Status s = box->Release();
    timings["release"] = Seconds(start);
    return s;
  };
  auto fail = [&](const Status& status) {
    release();
    return status;
  };

  // Set up: task files, instruction, harness helper files and config files.
  phase_start = Clock::now();
  const std::string root = backend_.name() == "local" ? box->handle().id + "/fs" : "";
  std::map<std::string, std::string> vars = {
      {"proxy", options_.proxy},
      {"secret", secret},
      {"model", options_.model.empty() ? profile.default_model : options_.model},
      {"instruction", task.instruction},
      {"instruction_file", root + "/forge/instruction.md"},
      {"workdir", root + options_.workdir},
      {"root", root},
      {"harnesses", mount_harnesses ? options_.harness_mount : HarnessInstallDir()},
      {"rollout_id", rollout_id},
      {"run_id", options_.run_id},
      {"task_id", task.id},
      {"command", task.command.empty() ? options_.command : task.command},
  };
  Scratch scratch;
  if (!task.files_dir.empty()) {
    Status s = box->CopyIn(task.files_dir, options_.workdir);
    if (!s.ok()) return fail(s.Prefixed("copy task files"));
  }
  auto instruction = scratch.Write("instruction.md", task.instruction);
  if (!instruction.ok()) return fail(instruction.status());
  if (Status s = box->CopyIn(*instruction, "/forge"); !s.ok()) return fail(s.Prefixed("copy instruction"));
  if (!profile.solution_dir.empty()) {
    // Only the oracle sees the solution: it checks that the task is solvable.
    std::string dest = root + profile.solution_dir;
    Status s = Status::Ok();
    if (!task.solution_dir.empty()) {
      s = box->CopyIn(task.solution_dir, profile.solution_dir);
    } else if (!task.solution_script.empty()) {
      auto script = scratch.Write("solve.sh", task.solution_script);
      s = script.ok() ? box->CopyIn(*script, profile.solution_dir) : script.status();
    } else {
      s = Status::DataErr("task " + task.id + " has no solution for the " + profile.name + " harness");
    }
    if (!s.ok()) return fail(s.Prefixed("copy solution"));
    vars["solution_dir"] = dest;
  }
  for (const auto& [dest_dir, source] : profile.files) {
    fs::path host = fs::path(profile.source_dir) / source;
    if (Status s = box->CopyIn(host.string(), dest_dir); !s.ok()) return fail(s.Prefixed("copy harness file"));
  }
  for (const auto& [path, content] : profile.config_files) {
    fs::path target(FillPlaceholders(path, vars));
    auto written = scratch.Write(target.filename().string(), FillPlaceholders(content, vars));
    if (!written.ok()) return fail(written.status());
    if (Status s = box->CopyIn(*written, target.parent_path().string()); !s.ok()) {
      return fail(s.Prefixed("write config " + target.string()));
    }
  }
  timings["setup"] = Seconds(phase_start);

  // The harness, under its deadline.
  sandbox::ExecRequest exec;
  for (const auto& arg : profile.command) exec.argv.push_back(FillPlaceholders(arg, vars));
  for (const auto& [k, v] : profile.env) exec.env[k] = FillPlaceholders(v, vars);
  exec.env["FORGE_ROLLOUT_ID"] = rollout_id;
  exec.env["FORGE_RUN_ID"] = options_.run_id;
  exec.env["FORGE_TASK_ID"] = task.id;
  exec.env["FORGE_INSTRUCTION_FILE"] = vars["instruction_file"];
  if (!options_.proxy.empty()) {
    exec.env["FORGE_PROXY_URL"] = options_.proxy;
    exec.env["FORGE_API_KEY"] = secret;
  }
  exec.timeout_seconds = agent_timeout;
  exec.max_output_bytes = options_.log_bytes;
  exec.cancel = &cancel_;
  phase_start = Clock::now();
  record["started_at"] = WallNow();
  auto ran = box->Exec(exec);
  timings["agent"] = Seconds(phase_start);
  if (!ran.ok()) return fail(ran.status().Prefixed("run harness"));
  record["exit_code"] = ran->exit_code;
  record["logs"] = {{"stdout", ran->stdout_data}, {"stderr", ran->stderr_data},
                    {"truncated", ran->truncated}};
  if (ran->out_of_memory) record["oom"] = true;
  if (ran->timed_out) {
    record["outcome"] = "agent_timeout";
    record["error"] = fmt::format("harness killed at its {} s deadline", agent_timeout);
  } else if (ran->exit_code != 0) {
    record["outcome"] = "agent_error";
    record["error"] = ran->out_of_memory
        ? fmt::format("harness killed: out of memory (limit {} bytes)", spec.limits.memory_bytes)
        : fmt::format("harness exited with status {}: {}", ran->exit_code,
                      Tail(ran->stderr_data, 300));
  } else {
    record["outcome"] = "ok";
  }
  if (options_.hold) {
    record["sandbox"] = box->handle().ToJson();
    record["sandbox"]["lifetime_seconds"] = spec.lifetime_seconds;
  } else if (Status s = release(); !s.ok()) {
    // The harness ran; a failed removal is gc's job, not a reason to redo it.
    record["release_error"] = s.message();
  }
  return Status::Ok();
}

Json Launcher::RunRollout(const Job& job) {
  const TaskSpec& task = *job.task;
  const std::string rollout_id = RolloutId(options_.run_id, task.id, job.attempt);
  const std::string harness = task.harness.empty() ? options_.harness : task.harness;
  const auto started = Clock::now();
  Json record = {{"schema", "forge.rollout/1"}, {"rollout_id", rollout_id},
                 {"run_id", options_.run_id},   {"task_id", task.id},
                 {"attempt", job.attempt},      {"harness", harness},
                 {"backend", backend_.name()}};
  auto profile = Profile(harness);
  if (!profile.ok()) {
    record["outcome"] = "infra_error";
    record["error"] = profile.status().message();
  }
  int retries = 0;
  while (profile.ok()) {
    record["timings"] = Json::object();
    Status s = TryOnce(job, **profile, rollout_id, record);
    if (s.ok()) break;
    if (cancel_.load() || s.code() == ExitCode::kInterrupted) {
      record["outcome"] = "cancelled";
      record["error"] = "stopped by signal";
      break;
    }
    record["outcome"] = "infra_error";
    record["error"] = s.message();
    if (!IsRetryable(s) || retries >= options_.infra_retries) break;
    ++retries;
    // Bounded exponential backoff with jitter, interruptible by SIGINT.
    static thread_local std::mt19937 rng(std::random_device{}());
    double delay = std::min(30.0, options_.backoff_seconds * (1 << std::min(retries - 1, 10)));
    delay *= std::uniform_real_distribution<double>(0.5, 1.0)(rng);
    cli::Warn(fmt::format("{} attempt {}: {}; retrying in {:.1f} s", task.id, job.attempt,
                          s.message(), delay));
    auto until = Clock::now() + std::chrono::duration<double>(delay);
    while (Clock::now() < until && !cancel_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  record["infra_retries"] = retries;
  if (!record.contains("timings")) record["timings"] = Json::object();
  record["timings"]["total"] = Seconds(started);
  record["task"] = task.record;
  const std::string outcome = record.value("outcome", std::string("infra_error"));
  Status stored = store_.UpdateRollout(rollout_id, outcome == "cancelled" ? "cancelled" : "finished",
                                       outcome, record);
  if (!stored.ok()) {
    // An attempt the store does not know is finished would be redone on resume.
    cli::Error("store: rollout " + rollout_id + ": " + stored.message());
  }
  return record;
}

Status Launcher::Run() {
  // Tasks first, so the total is known and broken ones are reported up front.
  std::vector<TaskSpec> tasks;
  size_t bad_tasks = 0;
  Status read = tasks::LoadTasks(options_.inputs, {}, [&](tasks::Task& task) -> Status {
    auto spec = SpecFromTask(task);
    if (!spec.ok()) {
      cli::Error(spec.status().message() + " (task skipped)");
      ++bad_tasks;
      return Status::Ok();
    }
    tasks.push_back(std::move(*spec));
    return Status::Ok();
  });
  if (!read.ok() && read.code() != ExitCode::kDataErr) return read;
  const bool bad_lines = !read.ok();

  // Resume: attempts that already have a final outcome in the store are not
  // run again; their stored records are re-emitted so the output is whole.
  std::map<std::pair<std::string, int>, Json> finished;
  auto rows = store_.RolloutsOfRun(options_.run_id);
  if (!rows.ok()) return rows.status().Prefixed("store");
  for (const auto& row : *rows) {
    if (row.status == "finished" && IsFinalOutcome(row.outcome) && row.record.is_object()) {
      finished[{row.task_id, static_cast<int>(row.attempt)}] = row.record;
    }
  }
  std::vector<Job> jobs;
  size_t skipped = 0;
  for (const auto& task : tasks) {
    for (int attempt = 0; attempt < options_.attempts; ++attempt) {
      auto it = finished.find({task.id, attempt});
      if (it != finished.end()) {
        Json again = it->second;
        again["resumed"] = true;
        if (Status s = Emit(again); !s.ok()) return s;
        ++skipped;
        continue;
      }
      jobs.push_back({&task, attempt});
    }
  }
  if (skipped) cli::Note(fmt::format("run {}: {} finished attempts skipped", options_.run_id, skipped));

  progress_ = std::make_unique<cli::Progress>("rollouts", jobs.size());
  std::atomic<size_t> next{0};
  std::atomic<int> infra_errors{0};
  std::atomic<bool> done{false};
  // SIGINT/SIGTERM: stop taking work and cancel what runs; every worker then
  // releases its sandbox on the way out.
  std::thread watcher([&] {
    while (!done.load()) {
      if (cli::StopRequested()) cancel_.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  auto worker = [&] {
    while (!cancel_.load()) {
      size_t i = next.fetch_add(1);
      if (i >= jobs.size()) return;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++running_;
        UpdateProgress();
      }
      Json record = RunRollout(jobs[i]);
      const std::string outcome = record.value("outcome", "");
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --running_;
        if (outcome == "ok") ++ok_;
        else if (outcome == "infra_error") ++infra_;
        else if (outcome != "cancelled") ++failed_;
        UpdateProgress();
      }
      if (outcome == "infra_error") infra_errors.fetch_add(1);
      if (progress_) progress_->Advance();
      if (Status s = Emit(record); !s.ok()) cancel_.store(true);  // no reader: stop
    }
  };
  std::vector<std::thread> pool;
  const int workers = std::max(1, std::min<int>(options_.jobs, static_cast<int>(jobs.size())));
  for (int i = 0; i < workers; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  done.store(true);
  watcher.join();
  progress_->Finish();

  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!output_status_.ok()) return output_status_;
  }
  if (cancel_.load()) return Status::Cancelled("stopped; every sandbox released");
  if (bad_tasks || bad_lines) {
    return bad_tasks ? Status::DataErr(fmt::format("{} task(s) skipped", bad_tasks)) : read;
  }
  if (int n = infra_errors.load()) {
    return Status::Unavailable(fmt::format("{} rollout(s) ended in infra_error", n));
  }
  return Status::Ok();
}

}  // namespace

std::string RolloutId(const std::string& run_id, const std::string& task_id, int attempt) {
  return Sha256Hex(run_id + '\n' + task_id + '\n' + std::to_string(attempt)).substr(0, 24);
}

Status Launch(const LaunchOptions& options, sandbox::Backend& backend, store::Store& store,
              records::JsonlWriter& out) {
  if (options.attempts < 1) return Status::Usage("-n must be at least 1");
  if (options.jobs < 1) return Status::Usage("-j must be at least 1");
  if (options.run_id.empty()) return Status::Usage("a run id is needed");
  Launcher launcher(options, backend, store, out);
  return launcher.Run();
}

Result<int> CollectGarbage(sandbox::Backend& backend, const std::string& run_id,
                           int64_t older_than_seconds) {
  return backend.Collect(run_id, older_than_seconds);
}

Result<std::unique_ptr<sandbox::Backend>> MakeBackend(const std::string& name) {
  if (name == "docker") {
    auto docker = std::make_unique<sandbox::docker::DockerBackend>();
    FORGE_RETURN_IF_ERROR(docker->Ping());
    return std::unique_ptr<sandbox::Backend>(std::move(docker));
  }
  if (name == "local") return std::unique_ptr<sandbox::Backend>(std::make_unique<sandbox::local::LocalBackend>());
  if (name == "k8s") {
    // Kubeconfig, $KUBECONFIG or in-cluster service account, as kubectl finds them.
    auto k8s = sandbox::k8s::MakeK8sBackend(sandbox::k8s::K8sOptions{});
    if (!k8s.ok()) return k8s.status();
    return std::unique_ptr<sandbox::Backend>(std::move(*k8s));
  }
  return Status::Usage("unknown backend '" + name + "' (local, docker, k8s)");
}

}  // namespace forge::launch
