#include "launch/launcher.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/free_memory.h"
#include "base/hash.h"
#include "base/work_pool.h"
#include "launch/attempt.h"
#include "launch/harness.h"
#include "launch/healthcheck.h"
#include "launch/mcp.h"
#include "launch/network.h"
#include "launch/services.h"
#include "launch/task_input.h"
#include "launch/task_list.h"
#include "tasks/env_template.h"
#include "tasks/load.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/image_pull.h"
#include "sandbox/k8s/k8s_backend.h"
#include "sandbox/k8s/network_policy.h"
#include "sandbox/local/local_backend.h"

namespace forge::launch {
namespace {

namespace fs = std::filesystem;
using Json = records::Json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point from) {
  return std::round(SecondsSince(from) * 1000) / 1000;
}

// Attempts that need no rerun: the harness ran and its outcome is known.
bool IsFinalOutcome(const std::string& outcome) {
  return outcome == "ok" || outcome == "agent_timeout" || outcome == "agent_error";
}

// Host-side scratch for files copied into a sandbox; removed on destruction.
class Scratch {
 public:
  explicit Scratch(const Env& env) {
    std::string pattern = env.VarOr("TMPDIR", "/tmp") + "/forge-launch-XXXXXX";
    if (mkdtemp(pattern.data())) dir_ = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // Writes content as <scratch>/<n>/<name> and returns that path.
  Result<std::string> Write(const std::string& name, const std::string& content) {
    if (dir_.empty()) return Status::CannotCreate("cannot create a scratch directory");
    std::string sub = dir_ + "/" + std::to_string(counter_++);
    std::error_code ec;
    fs::create_directories(sub, ec);
    std::string path = sub + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << content;
    if (!out) return Status::CannotCreate(path + ": write failed");
    return path;
  }

 private:
  std::string dir_;
  int counter_ = 0;
};

// An attempt's phases: each one's time goes into timings (and the progress
// line follows) as the next begins.
class Phases {
 public:
  Phases(Json& timings, std::function<void(const std::string&)> report)
      : timings_(timings), report_(std::move(report)) {}
  void Enter(const std::string& next) {
    if (next == phase_) return;
    if (!phase_.empty()) timings_[phase_] = Seconds(start_);
    phase_ = next;
    start_ = Clock::now();
    report_(next);
  }
  const std::string& current() const { return phase_; }

 private:
  Json& timings_;
  std::function<void(const std::string&)> report_;
  std::string phase_;
  Clock::time_point start_ = Clock::now();
};

// Absolute: the engine binds only absolute host paths.
std::string RelayBinary(const LaunchOptions& options) {
  std::error_code ec;
  fs::path path = fs::absolute(options.relay_binary.empty() ? DefaultRelayBinary() : options.relay_binary, ec);
  return path.lexically_normal().string();
}

// forge-box next to the running executable (how an install or a build
// directory lays it out, beside forge-relay).
std::string BoxBinary() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "forge-box" : (self.parent_path() / "forge-box").lexically_normal().string();
}

bool IsExecutable(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

struct Job {
  size_t task;  // in the run's TaskList
  int attempt;
};

// The most threads a run's steps take where rollouts wait parked: the
// steps block on the API server (create, exec, log, delete), not the CPU.
constexpr int kStepThreads = 64;

Status CheckProxyOnly(const LaunchOptions& options, const sandbox::Backend& backend);

// --workdir, else the task's, else the image's WORKDIR, else /work (an
// image without one would otherwise run the harness in /).
std::string WorkdirFor(const LaunchOptions& options, const TaskSpec& task, const sandbox::ImageConfig& image) {
  if (!options.workdir.empty()) return options.workdir;
  if (!task.workdir.empty()) return task.workdir;
  if (!image.workdir.empty() && image.workdir != "/") return image.workdir;
  return "/work";
}

// A task that needs GPUs runs with them or not at all.
Status CheckGpus(const TaskSpec& task, sandbox::Backend& backend) {
  if (task.gpus <= 0) return Status::Ok();
  const int available = backend.AvailableGpus();
  if (available < 0 || available >= task.gpus) return Status::Ok();
  return Status::BadConfig(fmt::format("{}: environment.gpus = {}, but the {} backend has {} (no NVIDIA "
                                       "runtime): not run without them",
                                       task.id, task.gpus, backend.name(), available));
}

class Launcher {
 public:
  Launcher(const LaunchOptions& options, sandbox::Backend& backend, store::Store& store,
           records::JsonlWriter& out)
      : options_(options), env_(*options.env), backend_(backend), store_(store), out_(out), cancel_(&env_.stop()) {}

  Status Run();

 private:
  // Run's stages, in order.
  Status ReadTasks(size_t& bad_tasks);
  Result<std::vector<Job>> PlanJobs();
  Status StartRelay(const std::vector<Job>& jobs);
  Status EnforceNetworks(const std::vector<Job>& jobs);
  Status CheckImages(const std::vector<Job>& jobs);
  Status PullSecret(const std::vector<Job>& jobs);
  int RunJobs(const std::vector<Job>& jobs);
  // A rollout is a chain of steps on pool_ (launcher.cpp, "A rollout's
  // steps"): it holds a thread only while a step runs, not while the
  // backend's sandbox runs (Backend::RunOnceParked) or a retry backs off.
  struct Rollout;
  struct Try;
  using RolloutPtr = std::shared_ptr<Rollout>;
  void StartRollout(const Job& job);
  void BeginTry(const RolloutPtr& r);
  // A try up to its harness's run: create, set up, start the harness.
  Status StartTry(const RolloutPtr& r);
  void RunHarness(const RolloutPtr& r);
  void OneShotRan(const RolloutPtr& r, Result<sandbox::ExecResult> ran);
  // A try after its harness's run: its result read, the sandbox held or released.
  void HarnessRan(const RolloutPtr& r, Result<sandbox::ExecResult> ran);
  Status EndTry(Try& t, Result<sandbox::ExecResult> ran, Json& record);
  // A try's Status: the rollout's end, or a retry after a backoff.
  void TryEnded(const RolloutPtr& r, Status s);
  void FinishRollout(const RolloutPtr& r);
  // Under mutex_: the next job's index, counted in flight, unless there is
  // none or a stop was requested.
  std::optional<size_t> TakeJob();
  void Post(size_t job);
  // On k8s, a task's environment/Dockerfile as the pushed image's digest
  // (spec.image), and each compose service's build: as its service's image.
  Status PublishImage(const Attempt& a, sandbox::Spec& spec, Json& record);
  Status PublishServiceImages(const Attempt& a, sandbox::Spec& spec, Json& record);
  // The rollout's row (its secret's hash) in the store; an earlier try's calls set aside.
  Status Register(const Attempt& a, Json& record);
  // While workers run jobs (below): freed memory given back and the
  // progress lines redrawn, each second until done.
  void EverySecond(const StopToken& done);
  // The harness in a sandbox created, filled from plan, and exec'd (a pod
  // with services, or a backend without one-shot sandboxes); t.box holds it.
  Result<sandbox::ExecResult> ExecHarness(Try& t, Json& record);
  HostPaths Host() const {
    return {HarnessInstallDir(), RelayBinary(options_), host_relay_ ? host_relay_->dir() : "", BoxBinary(),
            host_relay_ && host_relay_->egress()};
  }
  // Sets aside the calls recorded under the rollout, noting them in record:
  // all of them (a try's start: they are an earlier try's), or those that
  // started before `before` (a late call of a try set aside already, which
  // joins the calls set aside last).
  void SetAsideEarlierCalls(const std::string& task_id, int attempt, const std::string& rollout_id,
                            std::optional<double> before, Json& record);
  Result<const HarnessProfile*> Profile(const std::string& name);
  // {mcp_servers} for the profile; a task's servers that the harness cannot
  // read are said once per task and harness.
  Result<std::string> McpServersFor(const TaskSpec& task, const HarnessProfile& profile);
  // Absolute, since the docker engine binds only absolute host paths.
  std::string HarnessInstallDir() const {
    std::error_code ec;
    fs::path dir = fs::absolute(options_.harness_install_dir.empty() ? DefaultHarnessInstallDir(env_)
                                                                     : options_.harness_install_dir,
                                ec);
    return dir.lexically_normal().string();
  }
  Status Emit(const Json& record);
  void UpdateProgress();
  // The phase a running rollout is in, for the progress lines ("" when done).
  void SetPhase(const std::string& rollout_id, const std::string& task_id, int attempt,
                const std::string& phase);
  // How the current phase goes ("pull 12.0/40.1 MB"), its clock left running.
  void SetPhaseText(const std::string& rollout_id, const std::string& text);

  const LaunchOptions& options_;
  Env& env_;
  sandbox::Backend& backend_;
  store::Store& store_;
  records::JsonlWriter& out_;
  // Requested by a stop of env_ (SIGINT, SIGTERM) or when the output is gone.
  StopToken cancel_;
  // --network proxy-only: the host half of the relay, for the whole run.
  std::unique_ptr<HostRelay> host_relay_;
  net::Endpoint proxy_endpoint_;
  std::mutex mutex_;  // guards the fields below
  std::map<std::string, HarnessProfile> profiles_;
  std::set<std::string> mcp_warned_;
  Status output_status_;
  std::unique_ptr<Progress> progress_;
  int running_ = 0, ok_ = 0, failed_ = 0, infra_ = 0;
  struct Running {
    std::string label;
    std::string phase;
    Clock::time_point since;
  };
  std::map<std::string, Running> phases_;  // by rollout id
  std::optional<TaskList> tasks_;  // read by Run before any rollout, then only read
  const std::vector<Job>* jobs_ = nullptr;
  size_t next_job_ = 0;
  int in_flight_ = 0;
  std::condition_variable idle_;  // in_flight_ fell to 0
  std::unique_ptr<WorkPool> pool_;
  int infra_errors_ = 0;
};

Result<const HarnessProfile*> Launcher::Profile(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = profiles_.find(name);
  if (it != profiles_.end()) return &it->second;
  auto profile = LoadHarness(options_.harness_dir.empty() ? DefaultHarnessDir(env_) : options_.harness_dir, name);
  if (!profile.ok()) return profile.status();
  if (UsesPlaceholder(*profile, "harnesses")) {
    // Checked once here, not by every rollout failing to exec a missing binary.
    const std::string dir = HarnessInstallDir();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return Status::BadConfig("harness " + name + " runs from {harnesses} = " + dir +
                            ", which is not a directory: run scripts/install-harnesses.sh or "
                            "pass --harness-install-dir");
    }
  }
  return &profiles_.emplace(name, std::move(*profile)).first->second;
}

Result<std::string> Launcher::McpServersFor(const TaskSpec& task, const HarnessProfile& profile) {
  if (!profile.mcp_format) {
    // The oracle and the command harness reach a task's servers their own way.
    if (!task.mcp_servers.empty() && profile.solution_dir.empty() && profile.name != "command") {
      std::lock_guard<std::mutex> lock(mutex_);
      if (mcp_warned_.insert(task.id + "\n" + profile.name).second) {
        env_.Warn(task.id + ": harness " + profile.name + " has no MCP client (no mcp_format in its profile); the "
                  "task's MCP servers are not offered to it");
      }
    }
    return std::string();
  }
  return RenderMcpServers(*profile.mcp_format, task.mcp_servers);
}

Status Launcher::Emit(const Json& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!output_status_.ok() || output_status_.output_closed()) return output_status_;
  output_status_ = out_.Write(record);
  return output_status_;
}

void Launcher::UpdateProgress() {
  if (!progress_ || !progress_->shown()) return;
  progress_->SetDetail(fmt::format("{} running, {} passed, {} failed, {} infra errors", running_,
                                   ok_, failed_, infra_));
  std::vector<std::string> lines;
  const auto now = Clock::now();
  for (const auto& [id, running] : phases_) {
    lines.push_back(fmt::format("  {:<40} {:<8} {:5.1f}s", running.label, running.phase,
                                std::chrono::duration<double>(now - running.since).count()));
  }
  progress_->SetLines(std::move(lines));
}

void Launcher::SetPhase(const std::string& rollout_id, const std::string& task_id, int attempt,
                        const std::string& phase) {
  if (!progress_ || !progress_->shown()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (phase.empty()) {
    phases_.erase(rollout_id);
  } else {
    Running& running = phases_[rollout_id];
    running.label = fmt::format("{} #{}", task_id.size() > 34 ? task_id.substr(0, 33) + "~" : task_id, attempt);
    running.phase = phase;
    running.since = Clock::now();
  }
  UpdateProgress();
}

void Launcher::SetPhaseText(const std::string& rollout_id, const std::string& text) {
  if (!progress_ || !progress_->shown()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto running = phases_.find(rollout_id);
  if (running == phases_.end() || running->second.phase == text) return;
  running->second.phase = text;
  UpdateProgress();
}

void Launcher::SetAsideEarlierCalls(const std::string& task_id, int attempt, const std::string& rollout_id,
                                    std::optional<double> before, Json& record) {
  Json* last = record.contains("set_aside_calls") ? &record["set_aside_calls"].back() : nullptr;
  std::string into = before && last ? last->value("rollout_id", "") : "";
  auto moved = store_.calls().SetAside(rollout_id, before, into);
  if (!moved.ok()) {
    env_.Warn("store: " + moved.status().message() + " (calls of an earlier try of " + rollout_id + " stay with it)");
    return;
  }
  if (moved->calls == 0) return;
  env_.Note(fmt::format("{} attempt {}: {} calls of an earlier try set aside as rollout {}", task_id, attempt,
                        moved->calls, moved->rollout_id));
  if (!into.empty() && moved->rollout_id == into) {
    (*last)["calls"] = last->value("calls", int64_t{0}) + moved->calls;
  } else {
    record["set_aside_calls"].push_back({{"rollout_id", moved->rollout_id}, {"calls", moved->calls}});
  }
}

// A rollout's steps. Each runs on pool_ and ends by handing the rollout to
// the next: StartRollout → BeginTry → StartTry → RunHarness → (the
// backend's parked run) → OneShotRan → HarnessRan → TryEnded → BeginTry
// again after a backoff timer, or FinishRollout. Between steps a rollout
// is this state, held by the steps' closures (and the backend's wait).
struct Launcher::Try {
  Try(Attempt attempt, Json& timings, std::function<void(const std::string&)> report, const Env& env)
      : a(std::move(attempt)), phases(timings, std::move(report)), scratch(env) {}
  Attempt a;
  Phases phases;
  sandbox::Spec spec;
  sandbox::OneShot plan;
  Scratch scratch;
  std::optional<sandbox::Display> display;
  std::unique_ptr<sandbox::Sandbox> box;  // the sandbox that is left (held, or to release)
};

struct Launcher::Rollout {
  Job job;
  TaskSpec task;  // rebuilt from the run's TaskList as the rollout starts
  std::string id;
  const HarnessProfile* profile = nullptr;
  Json record;
  Clock::time_point started = Clock::now();
  int retries = 0;
  double last_try_began = 0;  // its secret, and so its harness's calls, came after
  std::unique_ptr<Try> now;   // the try in flight
};

void Launcher::StartRollout(const Job& job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++running_;
    UpdateProgress();
  }
  auto r = std::make_shared<Rollout>();
  r->job = job;
  const TaskFacts& facts = tasks_->facts(job.task);
  r->id = RolloutId(options_.run_id, facts.id, job.attempt);
  r->record = {{"schema", "forge.rollout/1"}, {"rollout_id", r->id}, {"run_id", options_.run_id},
               {"task_id", facts.id},         {"attempt", job.attempt}};
  auto spec = tasks_->Spec(job.task);
  if (!spec.ok()) {
    // Read whole when the run began; what it names has changed since.
    r->task.id = facts.id;
    auto record = tasks_->Record(job.task);
    r->task.record = record.ok() ? *record : "{}";
    r->record["outcome"] = "infra_error";
    r->record["error"] = spec.status().message();
    return FinishRollout(r);
  }
  r->task = std::move(*spec);
  const std::string harness = r->task.harness.empty() ? options_.harness : r->task.harness;
  r->record["harness"] = harness;
  r->record["backend"] = backend_.name();
  auto profile = Profile(harness);
  if (!profile.ok()) {
    r->record["outcome"] = "infra_error";
    r->record["error"] = profile.status().message();
    return FinishRollout(r);
  }
  r->profile = *profile;
  BeginTry(r);
}

void Launcher::BeginTry(const RolloutPtr& r) {
  Json& record = r->record;
  record["timings"] = Json::object();
  record.erase("error");  // an earlier try's
  record.erase("error_kind");
  record.erase("transient");
  if (r->retries > 0 && cancel_.requested()) return TryEnded(r, Status::Cancelled("stopped during a backoff"));
  r->last_try_began = env_.Now();
  if (Status s = StartTry(r); !s.ok()) {
    r->now.reset();
    TryEnded(r, s);
  }
}

Status Launcher::StartTry(const RolloutPtr& r) {
  const Job& job = r->job;
  const TaskSpec& task = r->task;
  const HarnessProfile& profile = *r->profile;
  Json& record = r->record;
  // docker mounts forge-box; a k8s pod has it when the harness is its own
  // process (sandbox/k8s/supervised.h) and no services start before it.
  const bool has_box = backend_.kind() == sandbox::BackendKind::kDocker ||
                       (backend_.kind() == sandbox::BackendKind::kK8s && backend_.CanRunOnce() && !task.pod);
  // The secret is born here and leaves only in the harness's environment
  // and config files: the store keeps its hash, the record never sees it.
  r->now = std::make_unique<Try>(
      Attempt{options_, task, profile, backend_.kind(), r->id, job.attempt, "forge-" + RandomHex(24), has_box},
      record["timings"], [this, id = r->id, &task, n = job.attempt](const std::string& p) { SetPhase(id, task.id, n, p); },
      env_);
  Try& t = *r->now;
  const Attempt& a = t.a;
  t.phases.Enter("create");
  FORGE_RETURN_IF_ERROR(Register(a, record));
  if (Status s = CheckGpus(task, backend_); !s.ok()) {
    record["error_kind"] = "no_gpu";
    return s;
  }
  auto spec = SandboxSpec(a);
  if (!spec.ok()) return spec.status();
  t.spec = std::move(*spec);
  // The image is built or pulled once here, so its WORKDIR is known before
  // anything is put in place.
  t.phases.Enter("image");
  FORGE_RETURN_IF_ERROR(PublishImage(a, t.spec, record));
  auto image = backend_.PrepareImage(&t.spec, [&](const std::string& text) { SetPhaseText(r->id, text); });
  if (!image.ok()) return image.status();
  if (image->pulled) record["image_pulled"] = t.spec.image;  // for gc --images
  t.phases.Enter("create");
  const std::string workdir = WorkdirFor(options_, task, *image);
  t.spec.workdir = workdir;
  const HostPaths host = Host();
  const RelayPaths relay = AddHostMounts(a, host, t.spec);
  AddEgress(a, host, t.spec);
  auto mcp_servers = McpServersFor(task, profile);
  if (!mcp_servers.ok()) return mcp_servers.status();
  auto vars = Placeholders(a, host, workdir, *mcp_servers);
  FORGE_RETURN_IF_ERROR(AddCopies(a, workdir, vars, [&](const std::string& name, const std::string& content) {
    return t.scratch.Write(name, content);
  }, t.plan));
  t.display = task.display ? task.display : options_.display;
  auto exec = HarnessExec(a, vars, relay, proxy_endpoint_, t.display, Readiness(task, *image));
  if (!exec.ok()) return exec.status();
  t.plan.exec = std::move(*exec);
  t.plan.exec.cancel = &cancel_;
  if (t.display) record["display"] = t.display->ToString();
  RunHarness(r);
  return Status::Ok();
}

// As the sandbox's own process where the backend can (the fewest engine
// round trips; parked, on k8s, while it runs), else exec'd.
void Launcher::RunHarness(const RolloutPtr& r) {
  Try& t = *r->now;
  // A pod's services start before its harness: an exec'd sandbox.
  if (!backend_.CanRunOnce() || t.spec.pod) return HarnessRan(r, ExecHarness(t, r->record));
  t.plan.on_phase = [this, &t, &record = r->record](const std::string& next) {
    if (next == "agent") record["started_at"] = env_.Now();
    t.phases.Enter(next);
  };
  backend_.RunOnceParked(
      t.spec, t.plan, options_.hold ? &t.box : nullptr, [this](std::function<void()> step) { pool_->Post(std::move(step)); },
      [this, r](Result<sandbox::ExecResult> ran) { OneShotRan(r, std::move(ran)); });
}

void Launcher::OneShotRan(const RolloutPtr& r, Result<sandbox::ExecResult> ran) {
  Try& t = *r->now;
  if (ran.ok() || ran.status().kind() != Kind::kCannotCreate) {
    t.phases.Enter("");
    if (!ran.ok()) return HarnessRan(r, ran.status().Prefixed("run harness"));
    return HarnessRan(r, std::move(ran));
  }
  // The image's user cannot write the files where profiles expect them;
  // nothing ran, so the sandbox that copies them in as root takes over.
  env_.Warn(r->record.value("task_id", "") + ": " + ran.status().message() + "; using an exec'd sandbox");
  HarnessRan(r, ExecHarness(t, r->record));
}

void Launcher::HarnessRan(const RolloutPtr& r, Result<sandbox::ExecResult> ran) {
  Status s = EndTry(*r->now, std::move(ran), r->record);
  r->now.reset();  // the try's sandbox, files and scratch go before the next step
  TryEnded(r, s);
}

Status Launcher::EndTry(Try& t, Result<sandbox::ExecResult> ran, Json& record) {
  auto release = [&]() -> Status {
    if (!t.box) return Status::Ok();
    t.phases.Enter("release");
    Status s = t.box->Release();
    t.box.reset();
    return s;
  };
  if (!ran.ok()) {
    (void)release();  // the failure that brought us here is the one to report
    return ran.status();
  }
  if (t.phases.current() == "agent") t.phases.Enter("");
  const sandbox::Spec& spec = t.spec;
  const std::string where = backend_.kind() == sandbox::BackendKind::kLocal ? "the host (local backend)"
                            : "image " + (spec.image.empty() ? "built from " + spec.build_context : spec.image);
  if (Status s = ReadHarnessRun(t.a, *ran, t.display, where, spec.limits.memory_bytes, record); !s.ok()) {
    (void)release();
    return s;
  }
  if (options_.hold && t.box) {
    record["sandbox"] = t.box->handle().ToJson();
    record["sandbox"]["lifetime_seconds"] = spec.lifetime_seconds;
  } else if (Status s = release(); !s.ok()) {
    // The harness ran; a failed removal is gc's job, not a reason to redo it.
    record["release_error"] = s.message();
  }
  t.phases.Enter("");
  return Status::Ok();
}

void Launcher::TryEnded(const RolloutPtr& r, Status s) {
  Json& record = r->record;
  if (s.ok()) return FinishRollout(r);
  if (cancel_.requested() || s.kind() == Kind::kCancelled) {
    record["outcome"] = "cancelled";
    record["error"] = "stopped by signal";
    return FinishRollout(r);
  }
  record["outcome"] = "infra_error";
  record["error"] = s.message();
  // Whether a retry could help (a registry 5xx, a timeout, a busy engine)
  // or meets the same wall (image not found, a failing build step).
  record["transient"] = s.transient();
  if (!s.transient() || r->retries >= options_.infra_retries) return FinishRollout(r);
  ++r->retries;
  // Bounded exponential backoff with jitter: a timer, hurried by a stop.
  double delay = std::min(30.0, options_.backoff_seconds * (1 << std::min(r->retries - 1, 10)));
  delay *= 0.5 + 0.5 * RandomUnit();
  env_.Warn(fmt::format("{} attempt {}: {}; retrying in {:.1f} s", r->task.id, r->job.attempt, s.message(), delay));
  pool_->PostAfter(delay, [this, r] { BeginTry(r); });
}

// The record completed, stored and written; the rollout counted by its
// outcome, and its place in flight given to the next job.
void Launcher::FinishRollout(const RolloutPtr& r) {
  Json& record = r->record;
  const TaskSpec& task = r->task;
  record["infra_retries"] = r->retries;
  // A call of a try that died may still have been in flight when this try
  // set that try's calls aside (a long generation whose client was gone): it
  // is recorded after, under the rollout, but started before this try.
  if (r->last_try_began > 0) SetAsideEarlierCalls(task.id, r->job.attempt, r->id, r->last_try_began, record);
  if (record.value("outcome", "") == "infra_error") {
    // Said once here, whatever the cause: the exit status alone (69) does
    // not tell which rollout met which wall.
    env_.Error(fmt::format("{} attempt {}: {}", task.id, r->job.attempt, record.value("error", "")));
  }
  if (!record.contains("timings")) record["timings"] = Json::object();
  record["timings"]["total"] = Seconds(r->started);
  record["task"] = Json::parse(task.record);
  const std::string outcome = record.value("outcome", std::string("infra_error"));
  // Without its profile the attempt never reached the store (StartTry
  // registers it): there is nothing to mark finished, and a resume runs it.
  if (r->profile) {
    Status stored = store_.rollouts().Update(r->id, outcome == "cancelled" ? "cancelled" : "finished", outcome, record);
    // An attempt the store does not know is finished would be redone on resume.
    if (!stored.ok()) env_.Error("store: rollout " + r->id + ": " + stored.message());
  }
  std::optional<size_t> next;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    if (outcome == "ok") ++ok_;
    else if (outcome == "infra_error") ++infra_, ++infra_errors_;
    else if (outcome != "cancelled") ++failed_;
    UpdateProgress();
  }
  if (progress_) progress_->Advance();
  if (Status s = Emit(record); !s.ok()) cancel_.Request();  // no reader: stop
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --in_flight_;
    next = TakeJob();
    if (in_flight_ == 0) idle_.notify_all();
  }
  if (next) Post(*next);
}

std::optional<size_t> Launcher::TakeJob() {
  if (cancel_.requested() || next_job_ >= jobs_->size()) return std::nullopt;
  ++in_flight_;
  return next_job_++;
}

void Launcher::Post(size_t job) {
  pool_->Post([this, job] { StartRollout((*jobs_)[job]); });
}

Status Launcher::PublishImage(const Attempt& a, sandbox::Spec& spec, Json& record) {
  if (backend_.kind() != sandbox::BackendKind::kK8s) return Status::Ok();
  FORGE_RETURN_IF_ERROR(PublishServiceImages(a, spec, record));
  if (spec.build_context.empty()) return Status::Ok();
  if (options_.images == nullptr) return Status::Internal("task " + a.task.id + ": no registry (CheckImages)");
  // The harness the profile runs from the install directory goes into the
  // image, where {harnesses} points on k8s.
  std::optional<sandbox::docker::HarnessLayer> layer;
  if (UsesPlaceholder(a.profile, "harnesses")) layer = sandbox::docker::HarnessLayer{Host().harness_install_dir,
                                                                                     options_.harness_mount};
  auto published = options_.images->Publish(spec.build_context, layer ? &*layer : nullptr, options_.run_id,
                                            spec.build_timeout_seconds,
                                            [&](const std::string& text) { SetPhaseText(a.rollout_id, text); });
  if (!published.ok()) return published.status().Prefixed("task " + a.task.id + ": image for the cluster");
  spec.image = published->image;
  spec.build_context.clear();
  record["image"] = published->image;
  if (published->built) record["image_built"] = published->tag;
  if (published->pushed) record["image_pushed"] = published->tag;
  return Status::Ok();
}

// Built and pushed as the task's image is (no harness layer: the harness
// runs in main); the record's service_images names each one's digest, and
// the tag this rollout pushed.
Status Launcher::PublishServiceImages(const Attempt& a, sandbox::Spec& spec, Json& record) {
  if (!spec.pod || !BuildsServiceImages(*spec.pod)) return Status::Ok();
  if (options_.images == nullptr) return Status::Internal("task " + a.task.id + ": no registry (CheckImages)");
  auto pod = std::make_shared<sandbox::Pod>(*spec.pod);
  for (sandbox::PodService& service : pod->services) {
    if (service.build_context.empty()) continue;
    auto published = options_.images->Publish(service.build_context, nullptr, options_.run_id,
                                              spec.build_timeout_seconds,
                                              [&](const std::string& text) { SetPhaseText(a.rollout_id, text); });
    if (!published.ok()) {
      return published.status().Prefixed("task " + a.task.id + ": service " + service.name + ": image for the cluster");
    }
    service.image = published->image;
    service.build_context.clear();
    Json& entry = record["service_images"][service.name];
    entry["image"] = published->image;
    if (published->pushed) entry["pushed"] = published->tag;
  }
  spec.pod = std::move(pod);
  return Status::Ok();
}

Status Launcher::Register(const Attempt& a, Json& record) {
  store::RolloutRow row;
  row.id = a.rollout_id;
  row.run_id = options_.run_id;
  row.task_id = a.task.id;
  row.attempt = a.number;
  row.harness = a.profile.name;
  row.secret_hash = Sha256Hex(a.secret);
  row.status = "running";
  FORGE_RETURN_IF_ERROR(store_.rollouts().Register(row).Prefixed("store"));
  // An attempt run again keeps its rollout id: calls the proxy recorded for
  // a try that died (this run resumed after a crash, or an infrastructure
  // retry) would be read as this try's. The new secret stops that try from
  // recording more; what it recorded is set aside, kept under another id.
  SetAsideEarlierCalls(a.task.id, a.number, a.rollout_id, std::nullopt, record);
  return Status::Ok();
}

Result<sandbox::ExecResult> Launcher::ExecHarness(Try& t, Json& record) {
  t.phases.Enter("create");
  auto created = backend_.Create(t.spec);
  if (!created.ok()) return created.status().Prefixed("create sandbox");
  t.box = std::move(*created);
  t.phases.Enter("setup");
  // The local backend's root is known only now; other backends have none.
  const bool local = backend_.kind() == sandbox::BackendKind::kLocal;
  const std::map<std::string, std::string> only_root = {{"root", local ? t.box->handle().id + "/fs" : ""}};
  auto fill_root = [&](const std::string& text) { return local ? FillPlaceholders(text, only_root) : text; };
  for (const auto& [host, dest] : t.plan.copies) {
    FORGE_RETURN_IF_ERROR(t.box->CopyIn(host, dest).Prefixed("copy " + host));
  }
  for (size_t i = 0; i < t.plan.files.size(); ++i) {
    const auto& [path, content] = t.plan.files[i];
    fs::path target(fill_root(path));
    // plan.files[0] is the instruction, the task's own text: left as it is.
    auto written = t.scratch.Write(target.filename().string(), i == 0 ? content : fill_root(content));
    if (!written.ok()) return written.status();
    FORGE_RETURN_IF_ERROR(t.box->CopyIn(*written, target.parent_path().string()).Prefixed("write " + target.string()));
  }
  for (auto& arg : t.plan.exec.argv) arg = fill_root(arg);
  for (auto& [k, v] : t.plan.exec.env) v = fill_root(v);
  t.phases.Enter("agent");
  record["started_at"] = env_.Now();
  auto ran = t.box->Exec(t.plan.exec);
  if (!ran.ok()) return ran.status().Prefixed("run harness");
  return ran;
}

// Tasks first, so the total is known and broken ones are reported up front;
// each kept as its facts and spooled record (launch/task_list.h). A task
// that cannot be run is named and counted in bad_tasks; a malformed line is
// the InvalidData returned (the rest are read).
Status Launcher::ReadTasks(size_t& bad_tasks) {
  auto list = TaskList::Open(env_.VarOr("TMPDIR", "/tmp"));
  if (!list.ok()) return list.status();
  tasks_ = std::move(*list);
  return tasks::LoadTasks(options_.inputs, env_, {}, [&](tasks::Task& task) -> Status {
    auto spec = SpecFromTask(task);
    if (!spec.ok()) {
      env_.Error(spec.status().message() + " (task skipped)");
      ++bad_tasks;
      return Status::Ok();
    }
    return tasks_->Add(task, *spec);
  });
}

// Resume: attempts that already have a final outcome in the store are not
// run again; their stored records are re-emitted so the output is whole.
Result<std::vector<Job>> Launcher::PlanJobs() {
  std::map<std::pair<std::string, int>, Json> finished;
  auto rows = store_.rollouts().OfRun(options_.run_id);
  if (!rows.ok()) return rows.status().Prefixed("store");
  for (const auto& row : *rows) {
    if (row.status == "finished" && IsFinalOutcome(row.outcome) && row.record.is_object()) {
      finished[{row.task_id, static_cast<int>(row.attempt)}] = row.record;
    }
  }
  std::vector<Job> jobs;
  size_t skipped = 0;
  for (size_t task = 0; task < tasks_->size(); ++task) {
    for (int attempt = 0; attempt < options_.attempts; ++attempt) {
      auto it = finished.find({tasks_->facts(task).id, attempt});
      if (it == finished.end()) {
        jobs.push_back({task, attempt});
        continue;
      }
      Json again = it->second;
      again["resumed"] = true;
      if (Status s = Emit(again); !s.ok()) return s;
      ++skipped;
    }
  }
  if (skipped) env_.Note(fmt::format("run {}: {} finished attempts skipped", options_.run_id, skipped));
  return jobs;
}

// proxy-only for --network proxy-only, for tasks with allow_internet =
// false under --proxy, and for compose pods under --proxy (a namespace of
// their own); egress for compose pods in a namespace of their own that the
// engine gives none: one host relay for all of them.
Status Launcher::StartRelay(const std::vector<Job>& jobs) {
  if (backend_.kind() == sandbox::BackendKind::kK8s) return Status::Ok();  // pods reach a Service
  const TaskFacts* proxy_task = nullptr;
  const TaskFacts* egress_task = nullptr;
  for (const Job& job : jobs) {
    const TaskFacts& task = tasks_->facts(job.task);
    const std::string network = TaskNetwork(options_, task, backend_.kind());
    if (!proxy_task && RelaysProxy(network, options_.proxy)) proxy_task = &task;
    if (!egress_task && network == "own" && !backend_.OwnNetworkHasEgress()) egress_task = &task;
  }
  if (proxy_task == nullptr && egress_task == nullptr) return Status::Ok();
  std::optional<net::Endpoint> proxy;
  if (proxy_task != nullptr) {
    if (options_.network != "proxy-only") {
      if (Status s = CheckProxyOnly(options_, backend_); !s.ok()) {
        return Status::BadConfig("task " + proxy_task->id + " reaches --proxy through the relay (" +
                                 (proxy_task->has_pod ? "a compose pod has a network namespace of its own"
                                                  : "allow_internet = false means proxy-only") +
                                 "): " + s.message());
      }
    }
    auto target = ProxyOnlyTarget(options_.proxy);
    if (!target.ok()) return target.status();
    proxy_endpoint_ = *target;
    proxy = *target;
  }
  if (egress_task != nullptr && !IsExecutable(RelayBinary(options_))) {
    return Status::BadConfig("task " + egress_task->id + " is a compose pod with a network namespace of its own, "
                             "whose egress on this engine (no bridge network) goes through forge-relay: none "
                             "at " + RelayBinary(options_) + " (install it next to forge-launch or pass --relay-binary)");
  }
  auto relay = HostRelay::Start(proxy, env_, egress_task != nullptr);
  if (!relay.ok()) return relay.status();
  host_relay_ = std::move(*relay);
  // Held sandboxes live --hold-ttl past their harness; the hour covers the run itself.
  constexpr int64_t kRunMargin = 3600;
  if (options_.hold) FORGE_RETURN_IF_ERROR(host_relay_->KeepFor(options_.hold_seconds + kRunMargin));
  return Status::Ok();
}

// On k8s, the networks the jobs' pods get are enforced by NetworkPolicies
// (sandbox/k8s/network_policy.h), written, applied and checked before any
// pod is made.
Status Launcher::EnforceNetworks(const std::vector<Job>& jobs) {
  auto* k8s = dynamic_cast<sandbox::k8s::K8sBackend*>(&backend_);
  if (k8s == nullptr) return Status::Ok();
  std::vector<std::string> networks;
  std::string offline;  // tasks with allow_internet = false, named in a refusal
  for (const Job& job : jobs) {
    const TaskFacts& task = tasks_->facts(job.task);
    networks.push_back(TaskNetwork(options_, task, backend_.kind()));
    if (task.allow_internet == false && offline.find(task.id) == std::string::npos && offline.size() < 200) {
      offline += (offline.empty() ? "" : ", ") + task.id;
    }
  }
  auto unenforced = k8s->EnforceNetworks(
      networks, options_.proxy, offline.empty() ? "" : "tasks with allow_internet = false: " + offline);
  if (!unenforced.ok()) return unenforced.status();
  for (const auto& network : *unenforced) {
    env_.Warn("--k8s-allow-unenforced-network: pods with forge.network=" + network +
              " run with no NetworkPolicy policing their egress");
  }
  return Status::Ok();
}

// On k8s, tasks built from environment/Dockerfile or with a compose
// service's build: need a registry the cluster pulls from: refused before
// any pod when there is none.
Status Launcher::CheckImages(const std::vector<Job>& jobs) {
  if (backend_.kind() != sandbox::BackendKind::kK8s || options_.images != nullptr) return Status::Ok();
  std::string built;
  for (const Job& job : jobs) {
    const TaskFacts& task = tasks_->facts(job.task);
    if (!task.builds_images) continue;
    if (built.find(task.id) == std::string::npos && built.size() < 200) {
      built += (built.empty() ? "" : ", ") + task.id;
    }
  }
  if (built.empty()) return Status::Ok();
  return Status::BadConfig("tasks built from environment/Dockerfile or a compose build: (" + built +
                           ") need --registry on --backend k8s: "
                           "forge-launch builds each image, pushes it there and gives the pods its digest");
}

// On k8s, the Secret pods pull with: the one --k8s-image-pull-secret names,
// checked; else one made from the docker config's credentials for the
// registries of the images the pods pull, when it has any (deleted by Run's
// end).
Status Launcher::PullSecret(const std::vector<Job>& jobs) {
  auto* k8s = dynamic_cast<sandbox::k8s::K8sBackend*>(&backend_);
  if (k8s == nullptr) return Status::Ok();
  if (!k8s->options().image_pull_secret.empty()) return k8s->CheckPullSecret();
  bool launch_image = false, built = false;
  for (const Job& job : jobs) {
    launch_image |= tasks_->facts(job.task).uses_launch_image;
    built |= tasks_->facts(job.task).builds_images;
  }
  std::vector<std::string> images = tasks_->named_images();
  if (launch_image && !options_.image.empty()) images.push_back(options_.image);
  if (built && options_.images != nullptr) images.push_back(sandbox::docker::PublishRepository(options_.images->registry()));
  if (!k8s->options().box_image.empty()) images.push_back(k8s->options().box_image);
  auto config = sandbox::docker::PullSecretDockerConfig(images, options_.docker_config);
  if (!config.ok()) return config.status().Prefixed("the pods' image pull Secret");
  if (config->empty()) return Status::Ok();  // no credentials: the cluster pulls anonymously
  return k8s->ApplyPullSecret(options_.run_id, *config);
}

void Launcher::EverySecond(const StopToken& done) {
  while (!done.WaitFor(std::chrono::seconds(1))) {
    // What finished rollouts freed goes back to the kernel as the run goes,
    // not kept in malloc's arenas to its end (docs/k8s-backend.md).
    ReturnFreedMemory();
    if (!progress_->shown()) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    UpdateProgress();
  }
}

// -j rollouts in flight, taken in order until cancel_ (a stop, or no
// reader) is requested; their steps run on a pool of at most kStepThreads
// threads where the backend parks its runs (each of the others holds a
// thread for its whole run, as many as -j). Each second, freed memory goes
// back and, on a terminal, the per-rollout progress lines are redrawn.
// Returns how many rollouts ended in infra_error.
int Launcher::RunJobs(const std::vector<Job>& jobs) {
  progress_ = env_.StartProgress("rollouts", jobs.size());
  jobs_ = &jobs;
  const int in_flight = std::max(1, std::min<int>(options_.jobs, static_cast<int>(jobs.size())));
  const bool parks = backend_.ParksRunOnce() &&
                     std::none_of(jobs.begin(), jobs.end(), [this](const Job& job) { return tasks_->facts(job.task).has_pod; });
  pool_ = std::make_unique<WorkPool>(parks ? std::min(in_flight, kStepThreads) : in_flight,
                                     [this] { return cancel_.requested(); });
  StopToken done;
  std::thread ticker([&] { EverySecond(done); });
  std::vector<size_t> first;
  std::unique_lock<std::mutex> lock(mutex_);
  for (int i = 0; i < in_flight; ++i) {
    if (auto job = TakeJob()) first.push_back(*job);
  }
  lock.unlock();
  for (size_t job : first) Post(job);
  lock.lock();
  idle_.wait(lock, [this] { return in_flight_ == 0; });
  lock.unlock();
  pool_->Close();
  pool_->Drain();
  done.Request();
  ticker.join();
  progress_->Finish();
  return infra_errors_;
}

Status Launcher::Run() {
  size_t bad_tasks = 0;
  const Status read = ReadTasks(bad_tasks);
  if (!read.ok() && read.kind() != Kind::kInvalidData) return read;
  auto jobs = PlanJobs();
  if (!jobs.ok()) return jobs.status();
  FORGE_RETURN_IF_ERROR(CheckImages(*jobs));
  FORGE_RETURN_IF_ERROR(EnforceNetworks(*jobs));
  FORGE_RETURN_IF_ERROR(StartRelay(*jobs));
  FORGE_RETURN_IF_ERROR(PullSecret(*jobs));
  const int infra_errors = RunJobs(*jobs);
  if (auto* k8s = dynamic_cast<sandbox::k8s::K8sBackend*>(&backend_)) {
    // Pods pull as they start, and a running pod never pulls again.
    if (Status s = k8s->DeletePullSecret(); !s.ok()) env_.Warn(s.message() + " (forge-launch gc --run-id removes it)");
  }

  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!output_status_.ok()) return output_status_;
  }
  if (cancel_.requested()) return Status::Cancelled("stopped; every sandbox released");
  if (bad_tasks) return Status::InvalidData(fmt::format("{} task(s) skipped", bad_tasks));
  if (!read.ok()) return read;
  if (infra_errors) return Status::Unavailable(fmt::format("{} rollout(s) ended in infra_error", infra_errors));
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> SkillFolders(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound(dir + ": not a directory of skills");
  if (fs::is_regular_file(fs::path(dir) / "SKILL.md", ec)) return std::vector<std::string>{dir};
  std::vector<std::string> folders;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code missing;  // a folder without SKILL.md is not an error
    if (entry.is_directory(missing) && fs::is_regular_file(entry.path() / "SKILL.md", missing)) {
      folders.push_back(entry.path().string());
    }
  }
  if (ec) return Status::NotFound(dir + ": " + ec.message());
  if (folders.empty()) return Status::InvalidData(dir + ": no skill folder (a directory with a SKILL.md) in it");
  std::sort(folders.begin(), folders.end());
  return folders;
}

std::string RolloutId(const std::string& run_id, const std::string& task_id, int attempt) {
  return Sha256Hex(run_id + '\n' + task_id + '\n' + std::to_string(attempt)).substr(0, 24);
}

namespace {

// Everything --network proxy-only needs, checked before any sandbox is made.
Status CheckProxyOnly(const LaunchOptions& options, const sandbox::Backend& backend) {
  if (options.proxy.empty()) {
    return Status::InvalidArgument("--network proxy-only needs --proxy (the proxy's URL on 127.0.0.0/8, "
                         "e.g. http://127.0.0.1:8080)");
  }
  // On k8s: the proxy's Service, checked by Launch for any --proxy.
  if (backend.kind() == sandbox::BackendKind::kK8s) return Status::Ok();
  FORGE_RETURN_IF_ERROR(ProxyOnlyTarget(options.proxy).status());
  const std::string relay = RelayBinary(options);
  if (!IsExecutable(relay)) {
    return Status::BadConfig("--network proxy-only: no executable forge-relay at " + relay +
                          " (install it next to forge-launch or pass --relay-binary)");
  }
  return Status::Ok();
}

}  // namespace

Status Launch(const LaunchOptions& options, sandbox::Backend& backend, store::Store& store,
              records::JsonlWriter& out) {
  if (options.attempts < 1) return Status::InvalidArgument("-n must be at least 1");
  if (options.jobs < 1) return Status::InvalidArgument("-j must be at least 1");
  if (options.run_id.empty()) return Status::InvalidArgument("a run id is needed");
  if (options.network == "proxy-only") FORGE_RETURN_IF_ERROR(CheckProxyOnly(options, backend));
  if (backend.kind() == sandbox::BackendKind::kK8s && !options.proxy.empty()) {
    FORGE_RETURN_IF_ERROR(sandbox::k8s::ParseProxyService(options.proxy, "").status());
  }
  if (backend.kind() == sandbox::BackendKind::kDocker) {
    // PID 1 of a held sandbox and forge-verify's steps in it run forge-box.
    const std::string box = BoxBinary();
    if (!IsExecutable(box)) {
      return Status::BadConfig("no executable forge-box at " + box + " (it is installed next to forge-launch)");
    }
  }
  if (!options.skills_dir.empty()) {
    auto skills = SkillFolders(options.skills_dir);
    if (!skills.ok()) return Status::InvalidArgument("--skills: " + skills.status().message());
  }
  Launcher launcher(options, backend, store, out);
  return launcher.Run();
}

Result<int> CollectGarbage(sandbox::Backend& backend, const std::string& run_id,
                           int64_t older_than_seconds) {
  return backend.Collect(run_id, older_than_seconds);
}

Result<int> CollectImages(sandbox::Backend& backend, store::Store& store, const std::string& run_id) {
  auto rows = store.rollouts().OfRun(run_id);
  if (!rows.ok()) return rows.status().Prefixed("store");
  std::set<std::string> pulled;
  for (const auto& row : *rows) {
    if (row.record.is_object() && row.record.contains("image_pulled") && row.record["image_pulled"].is_string()) {
      pulled.insert(row.record["image_pulled"].get<std::string>());
    }
  }
  return backend.CollectImages(run_id, {pulled.begin(), pulled.end()});
}

Result<std::unique_ptr<sandbox::Backend>> MakeBackend(sandbox::BackendKind kind, Env& env,
                                                      const sandbox::k8s::K8sOptions& k8s_options,
                                                      bool bubblewrap, const DockerOptions& docker_options) {
  using sandbox::BackendKind;
  if (bubblewrap && kind != BackendKind::kLocal) return Status::InvalidArgument("--bubblewrap is for --backend local");
  if (kind == BackendKind::kDocker) {
    auto docker = std::make_unique<sandbox::docker::DockerBackend>(env);
    if (!docker_options.config.empty()) docker->set_docker_config(docker_options.config);
    if (docker_options.legacy_builder) docker->set_builder(sandbox::docker::Builder::kLegacy);
    FORGE_RETURN_IF_ERROR(docker->Ping());
    return std::unique_ptr<sandbox::Backend>(std::move(docker));
  }
  if (kind == BackendKind::kLocal) {
    if (bubblewrap) FORGE_RETURN_IF_ERROR(sandbox::local::LocalBackend::ProbeBubblewrap());
    return std::unique_ptr<sandbox::Backend>(std::make_unique<sandbox::local::LocalBackend>(env, "", bubblewrap));
  }
  if (kind == BackendKind::kK8s) {
    // What the flags say, then $KUBECONFIG / ~/.kube/config / the in-cluster
    // service account, as kubectl finds them.
    auto k8s = sandbox::k8s::MakeK8sBackend(k8s_options, env);
    if (!k8s.ok()) return k8s.status();
    return std::unique_ptr<sandbox::Backend>(std::move(*k8s));
  }
  return Status::Internal("no backend of kind " + std::to_string(static_cast<int>(kind)));
}

Result<std::unique_ptr<sandbox::docker::ImagePublisher>> MakeImagePublisher(Env& env, const DockerOptions& docker) {
  if (docker.registry.empty()) return std::unique_ptr<sandbox::docker::ImagePublisher>();
  auto engine = MakeBackend(sandbox::BackendKind::kDocker, env, {}, false, docker);
  if (!engine.ok()) return engine.status().Prefixed("--registry: images are built by the local Docker engine");
  std::unique_ptr<sandbox::docker::DockerBackend> builder(static_cast<sandbox::docker::DockerBackend*>(engine->release()));
  return std::make_unique<sandbox::docker::ImagePublisher>(std::move(builder), docker.registry,
                                                           sandbox::docker::RegistryTls{docker.registry_ca});
}

}  // namespace forge::launch
