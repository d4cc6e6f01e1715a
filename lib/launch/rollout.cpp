// A rollout's steps (run.h's Launcher): a try's sandbox made, filled and
// run, its result read, retried after a backoff or finished into the
// record, the store and the output.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/hash.h"
#include "launch/healthcheck.h"
#include "launch/mcp.h"
#include "launch/run.h"
#include "launch/services.h"
#include "sandbox/docker/image_publish.h"

namespace forge::launch {
namespace {

namespace fs = std::filesystem;

double Seconds(Clock::time_point from) {
  return std::round(SecondsSince(from) * 1000) / 1000;
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


}  // namespace

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
  if (r->retries > 0 && cancel_.requested()) {
    // Stopped during the backoff: the record keeps the last try's timings
    // and says what it met.
    Status stopped = Status::Cancelled("stopped by signal during a backoff; the last try: " + record.value("error", ""));
    record.erase("error_kind");
    record.erase("transient");
    return TryEnded(r, stopped);
  }
  record["timings"] = Json::object();
  record.erase("error");  // an earlier try's
  record.erase("error_kind");
  record.erase("transient");
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
    record["error"] = s.kind() == Kind::kCancelled && s.message().starts_with("stopped by signal") ? s.message()
                                                                                                  : "stopped by signal";
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

}  // namespace forge::launch
