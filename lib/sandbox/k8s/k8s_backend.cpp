#include "sandbox/k8s/k8s_backend.h"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>

#include "sandbox/box.h"
#include "sandbox/k8s/exec_channel.h"
#include "sandbox/k8s/pod_spec.h"
#include "sandbox/k8s/supervised.h"
#include "sandbox/tar.h"

namespace forge::sandbox::k8s {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class K8sSandbox : public Sandbox {
 public:
  K8sSandbox(K8sBackend& backend, std::string namespace_, std::string pod, bool box)
      : backend_(backend), handle_{std::string(BackendName(BackendKind::kK8s)), namespace_ + "/" + pod}, namespace_(namespace_),
        pod_(std::move(pod)), box_(box) {}

  const Handle& handle() const override { return handle_; }
  bool ExecsAsAnyUser() const override { return false; }
  // A supervised pod has forge-box at kBoxSandboxPath (supervised.h).
  bool has_box() const override { return box_; }
  bool exec_is_request() const override { return true; }

  // A supervised pod's one setup exec: unpacks the archive at "/", which
  // starts the harness (supervised.h).
  // The archive is gone when it returns (the harness runs on without it).
  Status Setup(std::string archive) {
    Result<ExecResult> result = Run(SetupCommand(), true, std::move(archive), 600, 64 * 1024);
    if (!result.ok()) return result.status().Prefixed("set up pod " + pod_);
    if (result->exit_code != 0) {
      return Status::IoError("set up pod " + pod_ + ": tar exited " + std::to_string(result->exit_code) + ": " +
                             result->stderr_data.substr(0, 400));
    }
    return Status::Ok();
  }

  Result<ExecResult> Exec(const ExecRequest& request) override {
    if (request.argv.empty()) return Status::InvalidArgument("exec: empty command");
    if (!request.user.empty()) {
      return Status::InvalidArgument("exec: the k8s backend runs commands as the pod's user; set the "
                           "user when the sandbox is created");
    }
    std::vector<std::string> command;
    if (!request.workdir.empty()) {
      command = {"sh", "-c", "cd -- \"$1\" || exit 126; shift; exec \"$@\"", "sh",
                 request.workdir};
    }
    if (!request.env.empty()) {
      command.push_back("env");
      for (const auto& [k, v] : request.env) command.push_back(k + "=" + v);
    }
    command.insert(command.end(), request.argv.begin(), request.argv.end());
    return Run(command, !request.stdin_data.empty(), request.stdin_data,
               request.timeout_seconds, request.max_output_bytes, request.stdin_heartbeat_seconds,
               !request.after_stop);
  }

  Status CopyIn(const std::string& host_path, const std::string& dest_dir) override {
    // As the other backends: a directory's contents land in dest_dir itself.
    TarWriter tar;
    FORGE_RETURN_IF_ERROR(AddCopy(tar, host_path, "").Prefixed("copy " + host_path));
    Result<ExecResult> result =
        Run({"sh", "-c", "mkdir -p -- \"$1\" && exec tar -x -o -f - -C \"$1\"", "sh", dest_dir},
            true, tar.Finish(), 600, 64 * 1024);
    if (!result.ok()) return result.status().Prefixed("copy " + host_path + " into " + pod_);
    if (result->exit_code != 0) {
      return Status::IoError("copy " + host_path + " into " + pod_ + ":" + dest_dir + ": tar exited " +
                        std::to_string(result->exit_code) + ": " + result->stderr_data);
    }
    return Status::Ok();
  }

  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    Result<ExecResult> result = Run(
        {"sh", "-c",
         "if [ ! -f \"$1\" ]; then echo \"$1: no such file\" >&2; exit 66; fi; exec cat -- \"$1\"",
         "sh", path},
        false, "", 300, max_bytes);
    if (!result.ok()) return result.status().Prefixed("read " + pod_ + ":" + path);
    if (result->exit_code == 66) return Status::NotFound(pod_ + ":" + path + ": no such file");
    if (result->exit_code != 0) {
      return Status::IoError("read " + pod_ + ":" + path + ": cat exited " +
                        std::to_string(result->exit_code) + ": " + result->stderr_data);
    }
    if (result->truncated) {
      return Status::InvalidData(pod_ + ":" + path + ": larger than " + std::to_string(max_bytes) +
                             " bytes");
    }
    return std::move(result->stdout_data);
  }

  Status Release() override { return backend_.DeletePod(pod_); }

 private:
  Result<ExecResult> Run(std::vector<std::string> command, bool send_stdin,
                         std::string stdin_data, double timeout, size_t max_output,
                         double heartbeat = 0, bool stoppable = true) {
    // v4 has no way to close stdin, so unless the server is known to speak
    // v5 the command reads exactly the bytes sent and sees EOF after them;
    // forge-box reads its input archive to its end blocks, not to EOF, and
    // runs nothing of the image's before it (box_protocol.h).
    const bool box_input = box_ && !command.empty() && command[0] == kBoxSandboxPath;
    if (send_stdin && !box_input && backend_.exec_protocol() != kProtocolV5) {
      std::vector<std::string> wrapped = {
          "sh", "-c", "head -c " + std::to_string(stdin_data.size()) + " | \"$@\"", "sh"};
      wrapped.insert(wrapped.end(), command.begin(), command.end());
      command = std::move(wrapped);
    }
    ExecCall call;
    call.namespace_ = namespace_;
    call.pod = pod_;
    call.container = backend_.options().container;
    call.command = std::move(command);
    call.send_stdin = send_stdin;
    call.stdin_data = std::move(stdin_data);
    call.timeout_seconds = timeout;
    call.max_output_bytes = max_output;
    call.stdin_heartbeat_seconds = heartbeat;
    if (stoppable) call.stop_requested = backend_.options().stop_requested;
    Result<ExecOutcome> outcome = RunExec(backend_.client(), call);
    if (!outcome.ok()) return outcome.status();
    backend_.NoteExecProtocol(outcome->protocol);
    return std::move(outcome->result);
  }

  K8sBackend& backend_;
  Handle handle_;
  std::string namespace_;
  std::string pod_;
  bool box_ = false;
};

// Past the harness's deadline (which the supervisor enforces), how long
// forge-launch waits for the watch to say it ended.
constexpr double kSupervisedGraceSeconds = 60;

Clock::time_point After(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

K8sBackend::K8sBackend(Cluster cluster, K8sOptions options)
    : options_(std::move(options)), client_(std::move(cluster), options_) {}

K8sBackend::~K8sBackend() = default;

std::string K8sBackend::PodsPath() const {
  return "/api/v1/namespaces/" + ApiClient::Escape(cluster().namespace_) + "/pods";
}

std::string K8sBackend::exec_protocol() {
  std::lock_guard<std::mutex> lock(mu_);
  return exec_protocol_;
}

void K8sBackend::NoteExecProtocol(const std::string& protocol) {
  std::lock_guard<std::mutex> lock(mu_);
  exec_protocol_ = protocol;
}

K8sBackend::WatchTotals K8sBackend::watch_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  WatchTotals total;
  for (const auto& [run, watcher] : watchers_) {
    total.lists += watcher->stats().lists.load();
    total.watches += watcher->stats().watches.load();
    total.events += watcher->stats().events.load();
    total.gone += watcher->stats().gone.load();
  }
  return total;
}

RunWatcher& K8sBackend::WatcherFor(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<RunWatcher>& watcher = watchers_[LabelValue(run_id)];
  if (!watcher) {
    watcher = std::make_unique<RunWatcher>(client_, cluster().namespace_, RunSelector(run_id),
                                           options_.container, options_.watch_timeout_seconds);
  }
  return *watcher;
}

Result<std::string> K8sBackend::CreatePod(const Spec& spec, std::string manifest) {
  Result<HttpResponse> response = client_.Call("POST", PodsPath(), manifest, "create pod");
  std::string().swap(manifest);
  if (!response.ok()) return response.status();
  if (response->status != 201 && response->status != 200) {
    return ApiError(*response, "create pod for rollout " + spec.rollout_id);
  }
  Result<Json> created = ParseJsonBody(*response, "create pod");
  if (!created.ok()) return created.status();
  std::string name = created->value("/metadata/name"_json_pointer, "");
  if (name.empty()) return Status::Protocol("create pod: the answer names no pod");
  return name;
}

Status K8sBackend::Abandon(const std::string& pod, RunWatcher& watcher, Status why) {
  // Never leave a pod behind that holds resources and will not run.
  Status deleted = DeletePod(pod);
  watcher.Forget(pod);
  if (!deleted.ok()) why = why.Prefixed("(and delete failed: " + deleted.message() + ")");
  return why;
}

Result<std::string> K8sBackend::StartPod(const Spec& spec, std::string manifest, RunWatcher& watcher) {
  const Clock::time_point deadline = After(options_.start_timeout_seconds);
  Result<std::string> name = CreatePod(spec, std::move(manifest));
  if (!name.ok()) return name;
  Result<PodView> running = watcher.WaitRunning(*name, deadline, options_.stop_requested);
  if (!running.ok()) return Abandon(*name, watcher, running.status());
  return name;
}

Result<std::unique_ptr<Sandbox>> K8sBackend::Create(const Spec& spec) {
  Result<Json> pod = BuildPod(spec, options_, cluster().namespace_);
  if (!pod.ok()) return pod.status();
  RunWatcher& watcher = WatcherFor(spec.run_id);  // watching before the pod exists
  Result<std::string> name = StartPod(spec, pod->dump(), watcher);
  if (!name.ok()) return name.status();
  return std::unique_ptr<Sandbox>(new K8sSandbox(*this, cluster().namespace_, *name, false));
}

// One pod-native rollout in flight (RunOnceParked): what its steps share.
// The waits between them are parked on the run's watch; each answer is
// posted to the caller's pool as the next step.
struct K8sBackend::PodRun {
  const Spec& spec;
  const OneShot& job;
  std::unique_ptr<Sandbox>* hold;
  Post post;
  RunDone done;
  RunWatcher& watcher;
  std::string name;
  Clock::time_point began;

  void Phase(const char* name) const {
    if (job.on_phase) job.on_phase(name);
  }
  std::function<bool()> Stop(const K8sOptions& options) const {
    return [stop = options.stop_requested, cancel = job.exec.cancel] {
      return (stop && stop()) || (cancel && cancel->requested());
    };
  }
};

namespace {

// Waits for run's result on the calling thread, running the steps
// RunOnceParked posts here: RunOnce as a parked run with one thread.
Result<ExecResult> RunHere(const std::function<void(const Backend::Post&, Backend::RunDone)>& start) {
  struct Mailbox {
    std::mutex mu;
    std::condition_variable changed;
    std::deque<std::function<void()>> steps;
    std::optional<Result<ExecResult>> answer;
  };
  auto box = std::make_shared<Mailbox>();
  start([box](std::function<void()> step) {
          std::lock_guard<std::mutex> lock(box->mu);
          box->steps.push_back(std::move(step));
          box->changed.notify_one();
        },
        [box](Result<ExecResult> answer) {
          std::lock_guard<std::mutex> lock(box->mu);
          box->answer = std::move(answer);
        });
  std::unique_lock<std::mutex> lock(box->mu);
  for (;;) {
    box->changed.wait(lock, [&] { return box->answer || !box->steps.empty(); });
    if (box->answer) return std::move(*box->answer);
    std::function<void()> step = std::move(box->steps.front());
    box->steps.pop_front();
    lock.unlock();
    step();
    lock.lock();
  }
}

// How long a pod-native pod may live (at least a second): a held pod's
// keep-alive, and the wait for a harness that has no timeout of its own.
int64_t PodLifetime(const Spec& spec) { return std::max<int64_t>(1, spec.lifetime_seconds); }

}  // namespace

Result<ExecResult> K8sBackend::RunOnce(const Spec& spec, const OneShot& job, std::unique_ptr<Sandbox>* hold) {
  return RunHere([&](const Post& post, RunDone done) { RunOnceParked(spec, job, hold, post, std::move(done)); });
}

// create (the init container installs forge-box), one setup exec (the files,
// the command, its environment; the last file starts it), the watch until
// the main container ends (or, held, is ready), the output, a delete.
void K8sBackend::RunOnceParked(const Spec& spec, const OneShot& job, std::unique_ptr<Sandbox>* hold, const Post& post,
                               RunDone done) {
  if (job.exec.argv.empty()) return done(Status::InvalidArgument("exec: empty command"));
  if (!job.exec.user.empty()) return done(Status::InvalidArgument("exec: the k8s backend runs commands as the pod's user"));
  Supervision supervision{options_.box_image, job.exec.timeout_seconds, job.exec.max_output_bytes,
                          hold ? PodLifetime(spec) : 0, options_.start_timeout_seconds};
  Result<Json> pod = BuildPod(spec, options_, cluster().namespace_, &supervision);
  if (!pod.ok()) return done(pod.status());
  std::string manifest = pod->dump();
  *pod = Json();  // a rollout in flight keeps no manifest
  auto run = std::make_shared<PodRun>(PodRun{spec, job, hold, post, std::move(done), WatcherFor(spec.run_id), "", {}});
  run->Phase("create");
  const Clock::time_point deadline = After(options_.start_timeout_seconds);
  Result<std::string> name = CreatePod(spec, std::move(manifest));
  if (!name.ok()) return run->done(name.status());
  run->name = *name;
  Park(run, RunWatcher::Running(run->name, deadline, options_.stop_requested), &K8sBackend::PodRunning);
}

void K8sBackend::Park(const std::shared_ptr<PodRun>& run, RunWatcher::Wait wait,
                      void (K8sBackend::*next)(const std::shared_ptr<PodRun>&, Result<PodView>)) {
  run->watcher.Park(run->name, std::move(wait), [this, run, next](Result<PodView> view) {
    run->post([this, run, next, view = std::move(view)]() mutable { (this->*next)(run, std::move(view)); });
  });
}

// The pod runs: the setup exec starts the harness, whose end is parked on.
void K8sBackend::PodRunning(const std::shared_ptr<PodRun>& run, Result<PodView> running) {
  if (!running.ok()) return run->done(Abandon(run->name, run->watcher, running.status()));
  run->Phase("setup");
  K8sSandbox box(*this, cluster().namespace_, run->name, true);
  {
    // Made only now: a rollout holds its archive from here to the exec's
    // end, not through the wait for its pod.
    Result<std::string> archive = SetupArchive(run->job);
    if (!archive.ok()) return run->done(Abandon(run->name, run->watcher, archive.status()));
    if (Status s = box.Setup(std::move(*archive)); !s.ok()) return run->done(Abandon(run->name, run->watcher, s));
  }
  run->Phase("agent");
  run->began = Clock::now();
  const ExecRequest& exec = run->job.exec;
  const double wait = exec.timeout_seconds > 0 ? exec.timeout_seconds + kSupervisedGraceSeconds
                                               : static_cast<double>(PodLifetime(run->spec));
  Park(run, RunWatcher::Done(run->name, run->hold != nullptr, After(wait), run->Stop(options_)), &K8sBackend::PodDone);
}

// The harness ended (or, held, is ready): its output, then the pod goes
// (or stays for the verifier).
void K8sBackend::PodDone(const std::shared_ptr<PodRun>& run, Result<PodView> done) {
  const std::string& name = run->name;
  if (!done.ok()) {
    Status why = done.status().kind() == Kind::kCancelled ? Status::Cancelled("exec cancelled") : done.status();
    return run->done(Abandon(name, run->watcher, why));
  }
  if (!run->hold) run->Phase("release");
  Result<ExecResult> result = SupervisedOutput(name, *done, run->job.exec.max_output_bytes);
  if (!result.ok()) return run->done(Abandon(name, run->watcher, result.status()));
  result->seconds = std::chrono::duration<double>(Clock::now() - run->began).count();
  if (run->hold) {
    *run->hold = std::unique_ptr<Sandbox>(new K8sSandbox(*this, cluster().namespace_, name, true));
    return run->done(std::move(result));
  }
  if (Status s = DeletePod(name); !s.ok()) result->stderr_data += "\n(delete pod " + name + ": " + s.message() + ")";
  run->watcher.Forget(name);
  run->done(std::move(result));
}

Result<ExecResult> K8sBackend::SupervisedOutput(const std::string& pod, const PodView& done, size_t max_output) {
  ExecResult result;
  std::optional<SuperviseReport> report;
  if (done.terminated) {
    // Only the supervisor's own line says the harness ended by itself; an
    // eviction, a deadline or an OOM kill of the supervisor is the cluster's.
    report = ParseSuperviseLine(done.message.substr(0, done.message.find('\n') + 1));
    if (!report) {
      return Status::Unavailable("pod " + pod + ": container " + options_.container + " ended (exit " +
                                 std::to_string(done.exit_code) + ") without forge-box's status line" +
                                 (done.message.empty() ? "" : ": " + done.message.substr(0, 300)));
    }
    report = TakeSuperviseOutput(done.message, &result.stdout_data, &result.stderr_data);
  }
  if (!report) {
    Result<std::string> log = Logs(pod, 0, static_cast<int64_t>(2 * max_output + 4096));
    if (!log.ok()) return log.status().Prefixed("harness output");
    report = TakeSuperviseOutput(*log, &result.stdout_data, &result.stderr_data);
    if (!report) return Status::Unavailable("pod " + pod + ": its log has no forge-box status line");
  }
  result.exit_code = report->exit_code;
  result.timed_out = report->timed_out;
  result.truncated = report->truncated;
  return result;
}

Result<std::unique_ptr<Sandbox>> K8sBackend::Attach(const Handle& handle) {
  if (!handle.Is(BackendKind::kK8s)) {
    return Status::InvalidArgument("handle of backend '" + handle.backend + "' given to the k8s backend");
  }
  std::string ns = cluster().namespace_;
  std::string name = handle.id;
  if (size_t slash = handle.id.find('/'); slash != std::string::npos) {
    ns = handle.id.substr(0, slash);
    name = handle.id.substr(slash + 1);
  }
  Result<HttpResponse> response =
      client_.Call("GET", "/api/v1/namespaces/" + ApiClient::Escape(ns) + "/pods/" +
                              ApiClient::Escape(name),
                   "", "get pod");
  if (!response.ok()) return response.status();
  if (response->status != 200) return ApiError(*response, "attach to pod " + handle.id);
  Result<Json> pod = ParseJsonBody(*response, "get pod");
  if (!pod.ok()) return pod.status();
  PodView view = ClassifyPod(*pod, options_.container);
  if (view.state != PodView::kRunning) {
    return Status::Unavailable("attach to pod " + handle.id + ": not running (" +
                               (view.reason.empty() ? view.phase : view.reason) + ")");
  }
  return std::unique_ptr<Sandbox>(new K8sSandbox(*this, ns, name, IsSupervised(*pod)));
}

Status K8sBackend::DeletePod(const std::string& pod) {
  Result<HttpResponse> response =
      client_.Call("DELETE", PodsPath() + "/" + ApiClient::Escape(pod),
                   R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,)"
                   R"("propagationPolicy":"Background"})",
                   "delete pod");
  if (!response.ok()) return response.status();
  if (response->status == 200 || response->status == 202 || response->status == 404) {
    return Status::Ok();
  }
  return ApiError(*response, "delete pod " + pod);
}

Result<std::string> K8sBackend::Logs(const std::string& pod, int64_t tail_lines,
                                     int64_t limit_bytes) {
  std::string path = PodsPath() + "/" + ApiClient::Escape(pod) +
                     "/log?container=" + ApiClient::Escape(options_.container);
  if (tail_lines > 0) path += "&tailLines=" + std::to_string(tail_lines);
  if (limit_bytes > 0) path += "&limitBytes=" + std::to_string(limit_bytes);
  Result<HttpResponse> response = client_.Call("GET", path, "", "pod logs");
  if (!response.ok()) return response.status();
  if (response->status != 200) return ApiError(*response, "logs of pod " + pod);
  return std::move(response->body);
}

Result<int> K8sBackend::Collect(const std::string& run_id, int64_t older_than_seconds) {
  std::string selector = ApiClient::Escape(RunSelector(run_id));
  if (older_than_seconds <= 0) {
    // One DELETE for the whole collection; the answer lists what it removed.
    Result<HttpResponse> response = client_.Call(
        "DELETE", PodsPath() + "?labelSelector=" + selector + "&gracePeriodSeconds=0", "",
        "delete pods by label");
    if (!response.ok()) return response.status();
    if (response->status != 200) return ApiError(*response, "delete pods of run " + run_id);
    Result<Json> list = ParseJsonBody(*response, "delete pods by label");
    if (!list.ok()) return list.status();
    // A run's pull Secret goes with its pods (one a killed forge-launch left).
    if (!run_id.empty()) FORGE_RETURN_IF_ERROR(CollectPullSecrets(run_id).status());
    const Json& items = (*list)["items"];
    return items.is_array() ? static_cast<int>(items.size()) : 0;
  }
  Result<HttpResponse> response =
      client_.Call("GET", PodsPath() + "?labelSelector=" + selector, "", "list pods");
  if (!response.ok()) return response.status();
  if (response->status != 200) return ApiError(*response, "list pods of run " + run_id);
  Result<Json> list = ParseJsonBody(*response, "list pods");
  if (!list.ok()) return list.status();
  std::time_t now = std::time(nullptr);
  int removed = 0;
  for (const Json& pod : (*list)["items"]) {
    std::string created = pod.value("/metadata/creationTimestamp"_json_pointer, "");
    std::tm tm{};
    if (!strptime(created.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) continue;
    if (now - timegm(&tm) < older_than_seconds) continue;
    std::string name = pod.value("/metadata/name"_json_pointer, "");
    FORGE_RETURN_IF_ERROR(DeletePod(name));
    ++removed;
  }
  return removed;
}

Result<std::unique_ptr<K8sBackend>> MakeK8sBackend(const K8sOptions& options, const Env& env) {
  Result<Cluster> cluster = ResolveCluster(options, env);
  if (!cluster.ok()) return cluster.status();
  K8sOptions settled = options;
  if (!settled.stop_requested) settled.stop_requested = [&env] { return env.stop().requested(); };
  return std::make_unique<K8sBackend>(std::move(*cluster), std::move(settled));
}

}  // namespace forge::sandbox::k8s
