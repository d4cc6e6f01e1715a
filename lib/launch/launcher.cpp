#include "launch/launcher.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "base/free_memory.h"
#include "base/hash.h"
#include "launch/mcp.h"
#include "launch/run.h"
#include "tasks/load.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/image_pull.h"
#include "sandbox/k8s/k8s_backend.h"
#include "sandbox/k8s/network_policy.h"
#include "sandbox/local/local_backend.h"

namespace forge::launch {
namespace {

namespace fs = std::filesystem;

// Attempts that need no rerun: the harness ran and its outcome is known.
bool IsFinalOutcome(const std::string& outcome) {
  return outcome == "ok" || outcome == "agent_timeout" || outcome == "agent_error";
}

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

Status CheckProxyOnly(const LaunchOptions& options, const sandbox::Backend& backend);

}  // namespace

HostPaths Launcher::Host() const {
  return {HarnessInstallDir(), RelayBinary(options_), host_relay_ ? host_relay_->dir() : "", BoxBinary(),
          host_relay_ && host_relay_->egress()};
}

std::string Launcher::HarnessInstallDir() const {
  std::error_code ec;
  fs::path dir = fs::absolute(options_.harness_install_dir.empty() ? DefaultHarnessInstallDir(env_)
                                                                   : options_.harness_install_dir,
                              ec);
  return dir.lexically_normal().string();
}

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
