#include "sandbox/docker/docker_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/hash.h"
#include "sandbox/docker/image_pull.h"
#include "sandbox/docker/pod_runner.h"
#include "sandbox/docker/raw_call.h"
#include "sandbox/docker/stream_demux.h"
#include "sandbox/box.h"
#include "sandbox/one_shot_script.h"
#include "sandbox/tar.h"

namespace forge::sandbox::docker {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string FiltersParam(const Json& filters) { return Engine::Escape(filters.dump()); }

// Stops a streamed exec at its deadline or when it is cancelled, and
// remembers which of the two it was.
struct ExecStop {
  ExecStop(const ExecRequest& request, Clock::time_point started)
      : request(request),
        has_deadline(request.timeout_seconds > 0),
        deadline(started + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(has_deadline ? request.timeout_seconds : 0))) {}
  bool KeepGoing() {
    if (request.cancel && request.cancel->requested()) {
      cancelled = true;
      return false;
    }
    if (has_deadline && Clock::now() >= deadline) {
      deadline_hit = true;
      return false;
    }
    return true;
  }
  const ExecRequest& request;
  const bool has_deadline;
  const Clock::time_point deadline;
  bool deadline_hit = false;
  bool cancelled = false;
};

std::string ArchivePath(const std::string& dir) {
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path.empty() ? "/" : path;
}

// PID 1: forge-box's keep-alive when the spec brings forge-box (it runs
// nothing from the image and reaps orphans), else a shell that sleeps in
// 10 s steps until the lifetime is over, so a container whose launcher died
// exits by itself. A shell rather than a bare `sleep` because PID 1 inherits
// every orphan: the shell's wait reaps them, where a bare sleep would
// collect the zombies of every killed harness. A deadline kill (`kill -KILL
// -1`) may cut one step short; the loop just goes on.
Json KeepAlive(const Spec& spec, int64_t lifetime) {
  if (!spec.box_binary.empty()) return KeepAliveArgv(lifetime);
  const int64_t steps = (lifetime + 9) / 10;
  return {"/bin/sh", "-c",
          "trap 'exit 0' TERM; i=0; while [ $i -lt " + std::to_string(steps) +
              " ]; do sleep 10 & wait $!; i=$((i+1)); done",
          "forge-keepalive"};
}

// Whether the cgroup's OOM killer fired in the container since `since`.
bool OomKilledSince(Engine& engine, const std::string& id, double since) {
  // The engine records an "oom" event when the cgroup's OOM killer fires,
  // even for a process other than PID 1 (State.OOMKilled only covers PID 1).
  Json filters = {{"container", {id}}, {"event", {"oom"}}};
  char range[96];
  std::snprintf(range, sizeof range, "since=%.3f&until=%.3f", since - 1, WallNow() + 0.5);
  auto response = engine.Call(
      "GET", "/events?" + std::string(range) + "&filters=" + FiltersParam(filters), "", {"", 10});
  if (response.ok() && response->status == 200 && response->body.find("\"oom\"") != std::string::npos) {
    return true;
  }
  auto inspect = engine.CallJson("GET", "/containers/" + id + "/json");
  return inspect.ok() && inspect->value("/State/OOMKilled"_json_pointer, false);
}

class DockerSandbox : public Sandbox {
 public:
  // pod: the rollout id its services are labelled with (pod_runner.h), if any.
  DockerSandbox(std::shared_ptr<Engine> engine, std::string id, std::string workdir,
                std::string user, std::string pod = "", bool box = false)
      : engine_(std::move(engine)), workdir_(std::move(workdir)), user_(std::move(user)), pod_(std::move(pod)),
        box_(box) {
    handle_.backend = BackendName(BackendKind::kDocker);
    handle_.id = std::move(id);
  }

  const Handle& handle() const override { return handle_; }
  Engine& engine() { return *engine_; }

  Result<ExecResult> Exec(const ExecRequest& request) override;
  Status CopyIn(const std::string& host_path, const std::string& dest_dir) override;
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override;
  Status Release() override;
  bool has_box() const override { return box_; }

 private:
  Result<std::string> CreateExec(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& workdir, const std::string& user);
  Status PutArchive(const std::string& dir, const std::string& tar);
  // Kills every process in the container except PID 1 (the keep-alive) and
  // the killer itself.
  Status KillAllButInit(const std::string& user);
  Result<Json> InspectExec(const std::string& exec_id);
  bool OomSince(double since);

  std::shared_ptr<Engine> engine_;
  Handle handle_;
  std::string workdir_;
  std::string user_;
  std::string pod_;
  bool box_ = false;
  int stdin_files_ = 0;
};

Result<std::string> DockerSandbox::CreateExec(const std::vector<std::string>& argv,
                                              const std::map<std::string, std::string>& env,
                                              const std::string& workdir,
                                              const std::string& user) {
  Json body = {{"Cmd", argv}, {"AttachStdin", false}, {"AttachStdout", true},
               {"AttachStderr", true}, {"Tty", false}, {"Privileged", false}};
  Json env_list = Json::array();
  for (const auto& [k, v] : env) env_list.push_back(k + "=" + v);
  body["Env"] = env_list;
  if (!workdir.empty()) body["WorkingDir"] = workdir;
  if (!user.empty()) body["User"] = user;
  auto created = engine_->CallJson("POST", "/containers/" + handle_.id + "/exec", body);
  if (!created.ok()) return created.status();
  if (!created->contains("Id")) return Status::Protocol("Docker engine: exec create: no Id");
  return (*created)["Id"].get<std::string>();
}

Result<Json> DockerSandbox::InspectExec(const std::string& exec_id) {
  return engine_->CallJson("GET", "/exec/" + exec_id + "/json");
}

Status DockerSandbox::KillAllButInit(const std::string& user) {
  auto exec_id = CreateExec({"/bin/sh", "-c", "kill -KILL -1 2>/dev/null; exit 0"}, {}, "/", user);
  if (!exec_id.ok()) return exec_id.status();
  auto started = engine_->CallJson("POST", "/exec/" + *exec_id + "/start",
                                   Json{{"Detach", true}, {"Tty", false}});
  return started.ok() ? Status::Ok() : started.status();
}

bool DockerSandbox::OomSince(double since) { return OomKilledSince(*engine_, handle_.id, since); }

Result<ExecResult> DockerSandbox::Exec(const ExecRequest& request) {
  if (request.argv.empty()) return Status::InvalidArgument("exec: empty command");
  const auto started = Clock::now();
  const double started_wall = WallNow();
  const std::string user = request.user.empty() ? user_ : request.user;
  std::vector<std::string> argv = request.argv;
  if (!request.stdin_data.empty()) {
    // Exec stdin needs a hijacked two-way connection; a file is simpler and
    // the harness cannot tell the difference.
    std::string name = ".forge-stdin-" + std::to_string(++stdin_files_);
    TarWriter tar;
    tar.AddFile(name, request.stdin_data, 0644);
    FORGE_RETURN_IF_ERROR(PutArchive("/tmp", tar.Finish()));
    argv.insert(argv.begin(), {"/bin/sh", "-c", "exec \"$@\" < /tmp/" + name, "sh"});
  }
  auto exec_id = CreateExec(argv, request.env,
                            request.workdir.empty() ? workdir_ : request.workdir, user);
  if (!exec_id.ok()) return exec_id.status();

  ExecStop stop(request, started);
  auto keep_going = [&stop] { return stop.KeepGoing(); };
  StreamDemux demux(request.max_output_bytes);
  auto streamed = engine_->Stream(
      "POST", "/exec/" + *exec_id + "/start", Json{{"Detach", false}, {"Tty", false}}.dump(),
      [&](std::string_view data) { demux.Feed(data); }, keep_going);

  ExecResult result;
  const bool aborted = !streamed.ok() && streamed.status().kind() == Kind::kCancelled;
  if (!streamed.ok() && !aborted) return streamed.status();
  if (streamed.ok() && *streamed != 200 && *streamed != 101) {
    return Status::Busy("Docker engine: exec start answered HTTP " + std::to_string(*streamed));
  }
  if (aborted) {
    FORGE_RETURN_IF_ERROR(KillAllButInit(user));
    result.timed_out = stop.deadline_hit;
  }
  // The exit code can lag the end of the stream: poll until the exec is done.
  const auto poll_until = Clock::now() + std::chrono::seconds(aborted ? 10 : 30);
  Json info;
  for (int i = 0;; ++i) {
    auto inspected = InspectExec(*exec_id);
    if (!inspected.ok()) return inspected.status();
    info = std::move(*inspected);
    if (!info.value("Running", false)) break;
    if (Clock::now() > poll_until) {
      // Last resort: the process ignores us, so the container goes.
      (void)engine_->Call("POST", "/containers/" + handle_.id + "/kill?signal=SIGKILL");
      return Status::Busy("exec " + *exec_id + " did not stop; container killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(i < 10 ? 5 : 50));
  }
  result.exit_code = info["ExitCode"].is_number() ? info["ExitCode"].get<int>() : -1;
  result.stdout_data = std::move(demux.out());
  result.stderr_data = std::move(demux.err());
  result.truncated = demux.truncated();
  result.seconds = SecondsSince(started);
  if (!result.timed_out && !stop.cancelled && result.exit_code == 137) {
    result.out_of_memory = OomSince(started_wall);
  }
  if (stop.cancelled) return Status::Cancelled("exec cancelled");
  return result;
}

Status DockerSandbox::PutArchive(const std::string& dir, const std::string& tar) {
  auto put = [&] {
    return engine_->Call("PUT",
                         "/containers/" + handle_.id + "/archive?path=" + Engine::Escape(dir) +
                             "&noOverwriteDirNonDir=1",
                         tar, {"application/x-tar", 300});
  };
  auto response = put();
  if (!response.ok()) return response.status();
  if (response->status == 404) {
    // The archive endpoint needs an existing directory.
    ExecRequest mkdir;
    mkdir.argv = {"mkdir", "-p", dir};
    mkdir.timeout_seconds = 60;
    mkdir.user = "0";
    auto made = Exec(mkdir);
    if (!made.ok()) return made.status().Prefixed("mkdir " + dir);
    if (made->exit_code != 0) {
      return Status::IoError("mkdir -p " + dir + " in the sandbox failed: " + made->stderr_data);
    }
    response = put();
    if (!response.ok()) return response.status();
  }
  if (response->status != 200) return StatusForHttp("PUT archive " + dir, *response);
  return Status::Ok();
}

Status DockerSandbox::CopyIn(const std::string& host_path, const std::string& dest_dir) {
  TarWriter tar;
  FORGE_RETURN_IF_ERROR(AddCopy(tar, host_path, ""));
  return PutArchive(ArchivePath(dest_dir), tar.Finish()).Prefixed("copy " + host_path);
}

Result<std::string> DockerSandbox::ReadFile(const std::string& path, size_t max_bytes) {
  auto response = engine_->Call(
      "GET", "/containers/" + handle_.id + "/archive?path=" + Engine::Escape(path), "", {"", 300});
  if (!response.ok()) return response.status();
  if (response->status == 404) return Status::NotFound(path + ": no such file in the sandbox");
  if (response->status != 200) return StatusForHttp("GET archive " + path, *response);
  auto entry = FirstFileInTar(response->body, max_bytes);
  if (!entry.ok()) return entry.status().Prefixed(path);
  return std::move(entry->content);
}

Status DockerSandbox::Release() {
  // A pod's services go first (they live in main's network namespace), its
  // volumes last (main holds them until it is gone).
  if (!pod_.empty()) FORGE_RETURN_IF_ERROR(RemovePod(*engine_, pod_, handle_.id));
  auto response = engine_->Call("DELETE", "/containers/" + handle_.id + "?force=1&v=1");
  if (!pod_.empty() && response.ok()) FORGE_RETURN_IF_ERROR(RemovePod(*engine_, pod_, ""));
  if (!response.ok()) return response.status();
  if (response->status == 404 || response->status == 204) return Status::Ok();
  // 409 "removal already in progress" means someone else is on it.
  if (response->status == 409 &&
      response->body.find("already in progress") != std::string::npos) {
    return Status::Ok();
  }
  return StatusForHttp("remove container " + handle_.id, *response);
}

}  // namespace

DockerBackend::DockerBackend(const Env& env)
    : engine_(std::make_shared<Engine>(EngineSocket(env))), docker_config_(DefaultDockerConfig(env)) {}

int DockerBackend::HostCpus() {
  std::lock_guard<std::mutex> lock(info_mutex_);
  if (host_cpus_ < 0) {
    auto info = engine_->CallJson("GET", "/info");
    host_cpus_ = info.ok() ? info->value("NCPU", 0) : 0;
  }
  return host_cpus_;
}

Status DockerBackend::Ping() {
  auto response = engine_->Call("GET", "/_ping", "", {"", 10});
  if (!response.ok()) return response.status();
  if (response->status != 200) return StatusForHttp("ping", *response);
  return Status::Ok();
}

Result<Json> BindMounts(const std::vector<Mount>& mounts) {
  Json out = Json::array();
  for (const Mount& m : mounts) {
    if (m.host_path.empty() || m.host_path[0] != '/' || m.sandbox_path.empty() ||
        m.sandbox_path[0] != '/') {
      return Status::BadConfig("sandbox mount " + m.host_path + ":" + m.sandbox_path +
                            ": both paths must be absolute");
    }
    out.push_back({{"Type", "bind"},
                   {"Source", m.host_path},
                   {"Target", m.sandbox_path},
                   {"ReadOnly", m.read_only}});
  }
  return out;
}

Result<std::string> DockerBackend::CreateContainer(const Spec& spec, Shape shape, const PodRunner* pod) {
  const bool one_shot = shape != Shape::kKept;
  std::string image = spec.image;
  if (!spec.build_context.empty()) {
    auto built = BuildImage(spec.build_context, spec.run_id, spec.build_timeout_seconds);
    if (!built.ok()) return built.status();
    image = *built;
  }
  if (image.empty()) return Status::BadConfig("sandbox: no image and no build context");
  const int64_t lifetime = std::max<int64_t>(1, spec.lifetime_seconds);
  Json labels = {{"forge.managed", "1"},
                 {"forge.run", spec.run_id},
                 {"forge.rollout", spec.rollout_id},
                 {"forge.deadline", std::to_string(static_cast<int64_t>(WallNow()) + lifetime)}};
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  Json env = Json::array();
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  const int64_t memory = spec.limits.memory_bytes;
  // The engine refuses more CPUs than the host has; a 4-CPU default on a
  // 2-core machine means "all of them".
  double cpus = spec.limits.cpus;
  if (int n = HostCpus(); n > 0 && cpus > n) cpus = n;
  Json host = {
      {"NanoCpus", static_cast<int64_t>(std::llround(cpus * 1e9))},
      {"Memory", memory},
      {"MemorySwap", memory},  // equal to Memory: no swap
      {"PidsLimit", spec.limits.pids},
      {"SecurityOpt", {"no-new-privileges"}},
      {"NetworkMode", NetworkMode(spec.network)},
      // A one-shot container goes when its command ends, even if forge died;
      // a kept or held one stays for forge-verify and gc.
      {"AutoRemove", shape == Shape::kOneShot},
      {"Init", false},  // PID 1 must be the keep-alive: `kill -1` spares only it
  };
  // Docker's default capabilities unless told otherwise, as `docker run` and Harbor.
  if (spec.drop_all_capabilities) host["CapDrop"] = {"ALL"};
  if (spec.gpus > 0) {
    host["DeviceRequests"] = {{{"Driver", ""}, {"Count", spec.gpus}, {"Capabilities", {{"gpu"}}}}};
  }
  // The image's ENTRYPOINT stays and runs forge's command as its arguments,
  // as Harbor's compose service runs its keep-alive: an entrypoint that
  // starts a service and then `exec "$@"` works the same under both.
  Json body = {{"Image", image},
               {"Cmd", one_shot ? Json{"/bin/sh", "-c", OneShotBootstrap(), "forge-oneshot"}
                                : KeepAlive(spec, lifetime)},
               {"Env", env},
               {"Labels", labels},
               {"Tty", false},
               {"OpenStdin", one_shot},  // the script comes on stdin, see one_shot_script.h
               {"StdinOnce", one_shot},
               {"AttachStdin", one_shot},
               {"AttachStdout", one_shot},
               {"AttachStderr", one_shot},
               {"HostConfig", host}};
  if (!spec.user.empty()) body["User"] = spec.user;
  if (!spec.workdir.empty()) body["WorkingDir"] = spec.workdir;
  std::vector<Mount> mounts = spec.mounts;
  if (!spec.box_binary.empty()) mounts.push_back({spec.box_binary, kBoxSandboxPath, true});
  if (!mounts.empty()) {
    auto mounts_json = BindMounts(mounts);
    if (!mounts_json.ok()) return mounts_json.status();
    body["HostConfig"]["Mounts"] = std::move(*mounts_json);
  }
  if (pod != nullptr) FORGE_RETURN_IF_ERROR(pod->AddToMain(body));
  std::string name = spec.rollout_id.empty() ? "" : "forge-" + spec.rollout_id;
  std::string path = "/containers/create" + (name.empty() ? "" : "?name=" + Engine::Escape(name));
  ReapUnstarted(spec.run_id);
  auto created = engine_->CallJson("POST", path, body);
  // A container of the same rollout left by a launcher that was killed:
  // replaced. Its removal may be under way already (AutoRemove after the
  // kill), when the name stays taken until it is done.
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  while (!created.ok() && created.status().kind() == Kind::kBusy && !name.empty() &&
         created.status().message().find("Conflict") != std::string::npos && Clock::now() < give_up) {
    (void)engine_->Call("DELETE", "/containers/" + Engine::Escape(name) + "?force=1&v=1");
    for (int i = 0; i < 100; ++i) {
      auto gone = engine_->Call("GET", "/containers/" + Engine::Escape(name) + "/json");
      if (gone.ok() && gone->status == 404) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    created = engine_->CallJson("POST", path, body);
  }
  if (!created.ok()) {
    if (created.status().kind() == Kind::kNotFound) {
      return Status::NotFound(created.status().message() + " (image " + image + " missing)");
    }
    return created.status();
  }
  return (*created)["Id"].get<std::string>();
}

void DockerBackend::ReapUnstarted(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(reap_mutex_);
  if (run_id.empty() || !reaped_runs_.insert(run_id).second) return;
  // Containers of this run that a killed launcher created and never
  // started: AutoRemove only fires when a container exits, so nothing else
  // removes them. Ours of this process are not created yet (this runs first).
  Json filters = {{"label", {"forge.managed=1", "forge.run=" + run_id}}, {"status", {"created"}}};
  auto listed = engine_->CallJson("GET", "/containers/json?all=1&filters=" + FiltersParam(filters));
  if (!listed.ok()) return;
  for (const auto& container : *listed) {
    (void)engine_->Call("DELETE", "/containers/" + container.value("Id", std::string()) + "?force=1&v=1");
  }
}

Result<std::unique_ptr<Sandbox>> DockerBackend::Create(const Spec& spec) {
  std::optional<PodRunner> pod;
  if (spec.pod) {
    pod.emplace(*engine_, spec);
    Status prepared = pod->Prepare([&](const std::string& context) { return BuildImage(context, spec.run_id, spec.build_timeout_seconds); });
    // Cleanup on a failed path is best effort: the failure is what is reported.
    if (!prepared.ok()) {
      (void)RemovePod(*engine_, spec.rollout_id, "");
      return prepared;
    }
  }
  auto created = CreateContainer(spec, Shape::kKept, pod ? &*pod : nullptr);
  if (!created.ok()) {
    if (pod) (void)RemovePod(*engine_, spec.rollout_id, "");
    return created.status();
  }
  const std::string id = *created;
  auto sandbox = std::make_unique<DockerSandbox>(engine_, id, spec.workdir, spec.user,
                                                 spec.pod ? spec.rollout_id : "", !spec.box_binary.empty());
  auto started = engine_->CallJson("POST", "/containers/" + id + "/start");
  if (!started.ok()) {
    (void)sandbox->Release();
    return started.status().Prefixed("start container");
  }
  if (pod) {
    // The services join main's network namespace, so they start after it;
    // the harness runs only once what main depends on is reached.
    double cpus = spec.limits.cpus;
    if (int n = HostCpus(); n > 0 && cpus > n) cpus = n;
    Status s = pod->Start(id, static_cast<int64_t>(std::llround(cpus * 1e9)));
    if (!s.ok()) {
      (void)sandbox->Release();
      return s.Prefixed("pod");
    }
  }
  return std::unique_ptr<Sandbox>(std::move(sandbox));
}

namespace {

// Sends a raw engine call and reads its answer's header, which must be one
// of the statuses given.
Result<RawCall> OpenRawCall(const Engine& engine, const std::string& path, bool upgrade, const char* what,
                            std::initializer_list<long> ok) {
  auto sent = RawCall::Send(engine.socket_path(), "POST", path, upgrade);
  if (!sent.ok()) return sent.status();
  auto status = sent->ReadHeader(120);
  if (!status.ok()) return status.status().Prefixed(what);
  if (std::find(ok.begin(), ok.end(), *status) == ok.end()) {
    return Status::Busy(std::string("Docker engine: ") + what + " answered HTTP " + std::to_string(*status));
  }
  return std::move(*sent);
}

// How a one-shot container's attach stream went.
struct AttachOutcome {
  Status status;         // the stream's own error, when neither of the below
  bool ended = false;    // a held sandbox's command printed its end lines
  bool aborted = false;  // stopped by its deadline or cancelled
};

// Reads the attach stream into demux until it ends, stop says so or, held,
// the end is known: both end lines, stdout's and stderr's, since each
// stream's pipe may still hold output written before the other's line. A
// command that closed its stdout leaves no stdout line: 2 s is enough for the
// pipe to drain.
AttachOutcome ReadAttached(RawCall& attach, StreamDemux& demux, ExecStop& stop) {
  std::optional<Clock::time_point> err_end;
  auto keep_going = [&] {
    if (demux.watched()) {
      if (demux.watched_stdout()) return false;
      if (!err_end) err_end = Clock::now();
      if (Clock::now() - *err_end > std::chrono::seconds(2)) return false;
    }
    return stop.KeepGoing();
  };
  AttachOutcome outcome;
  outcome.status = attach.ReadBody([&](std::string_view data) { demux.Feed(data); }, keep_going);
  outcome.ended = demux.watched().has_value();
  outcome.aborted = !outcome.ended && !outcome.status.ok() && outcome.status.kind() == Kind::kCancelled;
  return outcome;
}

// A held sandbox's end: its stderr line "MARKER STATUS DEADLINE" gives the
// exit status and whether the deadline ended it. The end lines are forge's,
// not the harness's output: both are cut from the output.
Status TakeEndLines(StreamDemux& demux, const std::string& marker, const std::string& id, ExecResult& result) {
  int status = -1, deadline = 0;
  if (std::sscanf(demux.watched()->c_str(), "%d %d", &status, &deadline) != 2) {
    return Status::Protocol("held sandbox " + id + ": malformed end line '" + *demux.watched() + "'");
  }
  result.exit_code = status;
  result.timed_out = deadline == 1;
  for (std::string* stream : {&demux.err(), &demux.out()}) {
    const std::string start = "\n" + marker + (stream == &demux.err() ? " " : "\n");
    if (size_t at = stream->find(start); at != std::string::npos) {
      size_t line_end = stream->find('\n', at + 1);
      stream->erase(at, line_end == std::string::npos ? std::string::npos : line_end + 1 - at);
    }
  }
  return Status::Ok();
}

// The exit status the wait sent before the start answers with.
Result<int> WaitedExitStatus(RawCall& wait, const std::string& id) {
  std::string answer;
  const auto wait_until = Clock::now() + std::chrono::seconds(120);
  Status waited = wait.ReadBody([&](std::string_view data) { answer.append(data); },
                                [&] { return Clock::now() < wait_until; });
  auto parsed = Json::parse(answer, nullptr, false);
  if (!waited.ok() || !parsed.is_object() || !parsed.contains("StatusCode")) {
    return Status::Busy("Docker engine: wait for container " + id + " gave no exit status" +
                        (waited.ok() ? "" : ": " + waited.message()));
  }
  return parsed["StatusCode"].is_number() ? parsed["StatusCode"].get<int>() : -1;
}

// The line the one-shot script's setup printed before it gave up, if it did.
std::optional<std::string> SetupFailure(const ExecResult& result) {
  if (result.exit_code != kOneShotSetupExit) return std::nullopt;
  size_t at = result.stderr_data.find("forge-setup: ");
  if (at == std::string::npos) return std::nullopt;
  std::string line = result.stderr_data.substr(at + 13);
  return line.substr(0, line.find('\n'));
}

}  // namespace

struct DockerBackend::OneShotStreams {
  std::optional<RawCall> wait;
  RawCall attach;
};

// `docker run --rm -i` as engine calls: create, wait (not held), attach, put
// the copies, start, send the script, read the output, then the exit status
// from the end lines (held), the container (held, ended early) or the wait.
Result<ExecResult> DockerBackend::RunOnce(const Spec& spec, const OneShot& job, std::unique_ptr<Sandbox>* hold) {
  if (job.exec.argv.empty()) return Status::InvalidArgument("exec: empty command");
  if (spec.pod) return Status::CannotCreate("a pod's services start before its harness: it runs in an exec'd sandbox");
  auto phase = [&](const char* name) {
    if (job.on_phase) job.on_phase(name);
  };
  phase("create");
  auto created = CreateContainer(spec, hold ? Shape::kOneShotHeld : Shape::kOneShot);
  if (!created.ok()) return created.status();
  const std::string id = *created;
  // Every way out before the end is known removes the container itself.
  auto fail = [&](Status status) {
    (void)engine_->Call("DELETE", "/containers/" + id + "?force=1&v=1");
    return status;
  };
  auto streams = OpenStreams(id, hold != nullptr);
  if (!streams.ok()) return fail(streams.status());
  auto& [wait, attach] = *streams;
  if (!job.copies.empty()) {
    phase("setup");
    if (Status s = PutCopies(id, job.copies); !s.ok()) return fail(s);
  }

  phase("agent");
  const auto started = Clock::now();
  const double started_wall = WallNow();
  auto start = engine_->CallJson("POST", "/containers/" + id + "/start");
  if (!start.ok()) return fail(start.status().Prefixed("start container"));
  const std::string marker = hold ? "forge-held-" + RandomHex(16) : "";
  const int64_t lifetime = std::max<int64_t>(1, spec.lifetime_seconds);
  if (Status s = attach.Write(OneShotScript(job, spec.workdir, lifetime, marker, !spec.box_binary.empty())); !s.ok()) return fail(s);
  attach.CloseWrite();

  // A held sandbox's deadline is the script's; the launcher's own is only a
  // backstop for a script that never answers.
  ExecRequest limits = job.exec;
  if (hold && limits.timeout_seconds > 0) limits.timeout_seconds += kHeldDeadlineGrace;
  ExecStop stop(limits, started);
  StreamDemux demux(limits.max_output_bytes);
  if (hold) {
    demux.WatchStderr(marker + " ");
    demux.WatchStdout(marker);
  }
  const AttachOutcome read = ReadAttached(attach, demux, stop);
  if (!read.status.ok() && !read.aborted && !read.ended) return fail(read.status.Prefixed("attach"));
  if (read.aborted && hold) {
    return fail(stop.cancelled ? Status::Cancelled("exec cancelled")
                               : Status::Busy("held sandbox " + id + ": no end of the command " +
                                              std::to_string(kHeldDeadlineGrace) + " s past its deadline"));
  }
  // Aborted: the whole container goes; nothing in it is kept for later.
  if (read.aborted) (void)engine_->Call("POST", "/containers/" + id + "/kill?signal=SIGKILL");

  ExecResult result;
  result.timed_out = stop.deadline_hit;
  if (!hold) phase("release");
  RawCall* waiting = wait ? &*wait : nullptr;
  if (Status s = ExitStatusOf(id, read.ended, demux, marker, waiting, result); !s.ok()) {
    return fail(s);
  }
  result.stdout_data = std::move(demux.out());
  result.stderr_data = std::move(demux.err());
  result.truncated = demux.truncated();
  result.seconds = SecondsSince(started);
  if (stop.cancelled) return Status::Cancelled("exec cancelled");
  if (!result.timed_out && result.exit_code == 137) result.out_of_memory = OomKilledSince(*engine_, id, started_wall);
  if (auto line = SetupFailure(result)) {
    Status s = Status::CannotCreate("one-shot sandbox: " + *line);
    return hold ? fail(s) : s;
  }
  if (hold && !read.ended) {
    return fail(Status::Busy("held sandbox " + id + " exited before its command ended (status " +
                             std::to_string(result.exit_code) + "): " + result.stderr_data.substr(0, 300)));
  }
  if (hold) *hold = std::make_unique<DockerSandbox>(engine_, id, spec.workdir, spec.user, "", !spec.box_binary.empty());
  return result;
}

// The wait is sent before the start, as `docker run --rm` does: with
// AutoRemove the container may be gone before a later wait could ask. Its
// header comes back once the engine has registered the waiter. A held
// container does not end, so it has no wait.
Result<DockerBackend::OneShotStreams> DockerBackend::OpenStreams(const std::string& id, bool held) {
  const std::string prefix = "/" + engine_->api_version() + "/containers/" + id;
  OneShotStreams streams;
  if (!held) {
    auto wait = OpenRawCall(*engine_, prefix + "/wait?condition=removed", false, "wait", {200});
    if (!wait.ok()) return wait.status();
    streams.wait = std::move(*wait);
  }
  auto attach =
      OpenRawCall(*engine_, prefix + "/attach?stream=1&stdin=1&stdout=1&stderr=1", true, "attach", {101, 200});
  if (!attach.ok()) return attach.status();
  streams.attach = std::move(*attach);
  return streams;
}

// The command's exit status: from a held sandbox's end lines, from the
// container of a held one (no wait) whose script stopped before the command
// (setup failure, cut-short script), else from the wait.
Status DockerBackend::ExitStatusOf(const std::string& id, bool ended, StreamDemux& demux,
                                   const std::string& marker, RawCall* wait, ExecResult& result) {
  if (ended) return TakeEndLines(demux, marker, id, result);
  if (wait == nullptr) {
    auto inspect = engine_->CallJson("GET", "/containers/" + id + "/json");
    if (!inspect.ok()) return inspect.status().Prefixed("inspect container");
    result.exit_code = inspect->value("/State/ExitCode"_json_pointer, -1);
    return Status::Ok();
  }
  auto status = WaitedExitStatus(*wait, id);
  if (!status.ok()) return status.status();
  result.exit_code = *status;
  return Status::Ok();
}

Status DockerBackend::PutCopies(const std::string& id,
                                const std::vector<std::pair<std::string, std::string>>& copies) {
  // One archive for every host file, put before the start (no exec, no
  // mkdir: the engine creates missing parents).
  TarWriter tar;
  for (const auto& [host_path, dest_dir] : copies) {
    std::string dest = ArchivePath(dest_dir);
    while (!dest.empty() && dest.front() == '/') dest.erase(0, 1);
    FORGE_RETURN_IF_ERROR(AddCopy(tar, host_path, dest));
  }
  auto put = engine_->Call("PUT", "/containers/" + id + "/archive?path=%2F&noOverwriteDirNonDir=1", tar.Finish(),
                           {"application/x-tar", 300});
  if (!put.ok()) return put.status();
  if (put->status != 200) return StatusForHttp("PUT archive /", *put);
  return Status::Ok();
}

Result<std::unique_ptr<Sandbox>> DockerBackend::Attach(const Handle& handle) {
  if (!handle.Is(BackendKind::kDocker)) {
    return Status::BadConfig("sandbox handle is for backend '" + handle.backend + "', not docker");
  }
  auto inspect = engine_->CallJson("GET", "/containers/" + Engine::Escape(handle.id) + "/json");
  if (!inspect.ok()) return inspect.status().Prefixed("attach " + handle.id);
  if (inspect->value("/Config/Labels/forge.managed"_json_pointer, std::string()) != "1") {
    return Status::BadConfig("container " + handle.id + " was not created by forge");
  }
  if (!inspect->value("/State/Running"_json_pointer, false)) {
    return Status::Unavailable("container " + handle.id + " is not running (" +
                               inspect->value("/State/Status"_json_pointer, std::string("?")) + ")");
  }
  bool box = false;
  for (const auto& mount : inspect->value("Mounts", Json::array())) {
    box = box || mount.value("Destination", std::string()) == kBoxSandboxPath;
  }
  return std::unique_ptr<Sandbox>(std::make_unique<DockerSandbox>(
      engine_, (*inspect)["Id"].get<std::string>(),
      inspect->value("/Config/WorkingDir"_json_pointer, std::string("/")),
      inspect->value("/Config/User"_json_pointer, std::string()),
      inspect->value(Json::json_pointer("/Config/Labels/" + std::string(kPodLabel)), std::string()), box));
}

Result<int> DockerBackend::Collect(const std::string& run_id, int64_t older_than_seconds) {
  Json label = Json::array({"forge.managed=1"});
  if (!run_id.empty()) label.push_back("forge.run=" + run_id);
  auto listed = engine_->CallJson("GET", "/containers/json?all=1&filters=" +
                                             FiltersParam(Json{{"label", label}}));
  if (!listed.ok()) return listed.status();
  const int64_t now = static_cast<int64_t>(WallNow());
  std::vector<std::string> doomed;
  for (const auto& container : *listed) {
    int64_t created = container.value("Created", int64_t{0});
    if (older_than_seconds > 0 && now - created < older_than_seconds) continue;
    doomed.push_back(container.value("Id", std::string()));
  }
  // The engine stops and deletes containers in parallel well; one at a time,
  // a held run's 200 sandboxes took 21 s.
  struct Removal {
    Status status;
    bool counted = true;  // not when someone else was removing it (409)
  };
  std::vector<Removal> outcome(doomed.size());
  std::atomic<size_t> next{0};
  auto remove = [&] {
    for (size_t i; (i = next.fetch_add(1)) < doomed.size();) {
      auto response = engine_->Call("DELETE", "/containers/" + doomed[i] + "?force=1&v=1");
      if (!response.ok()) {
        outcome[i].status = response.status();
      } else if (response->status == 409) {
        outcome[i].counted = false;
      } else if (response->status != 204 && response->status != 404) {
        outcome[i].status = StatusForHttp("remove container " + doomed[i], *response);
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(doomed.size(), kCollectParallelism); ++t) pool.emplace_back(remove);
  remove();
  for (auto& t : pool) t.join();
  int removed = 0;
  for (const Removal& r : outcome) {
    if (!r.status.ok()) return r.status;
    removed += r.counted;
  }
  // Pods' volumes, once the containers holding them are gone.
  auto volumes = CollectVolumes(*engine_, run_id);
  if (!volumes.ok()) return volumes.status();
  return removed + *volumes;
}

Result<int> DockerBackend::CollectImages(const std::string& run_id, const std::vector<std::string>& pulled) {
  if (run_id.empty()) return Status::InvalidArgument("gc --images needs --run-id");
  Json label = Json::array({"forge.managed=1", "forge.run=" + run_id});
  auto listed = engine_->CallJson("GET", "/images/json?filters=" + FiltersParam(Json{{"label", label}}));
  if (!listed.ok()) return listed.status();
  // By name, never by id: an id with two names is refused (409, "referenced
  // in multiple repositories"), while removing a name removes the image
  // with its last one. A built image has its one forge-task tag.
  std::vector<std::string> doomed = pulled;
  for (const auto& image : *listed) {
    const Json tags = image.value("RepoTags", Json::array());
    bool named = false;
    for (const auto& tag : tags.is_array() ? tags : Json::array()) {
      if (!tag.is_string() || tag.get<std::string>() == "<none>:<none>") continue;
      doomed.push_back(tag.get<std::string>());
      named = true;
    }
    if (!named) doomed.push_back(image.value("Id", std::string()));
  }
  int removed = 0;
  for (const auto& name : doomed) {
    auto response = engine_->Call("DELETE", "/images/" + Engine::Escape(name));
    if (!response.ok()) return response.status();
    if (response->status == 200) {
      ++removed;
    } else if (response->status != 404 && response->status != 409) {  // gone, or still in use
      return StatusForHttp("remove image " + name, *response);
    }
  }
  return removed;
}

int DockerBackend::AvailableGpus() {
  auto info = engine_->CallJson("GET", "/info");
  if (!info.ok()) return 0;
  const Json runtimes = info->value("Runtimes", Json::object());
  return runtimes.is_object() && runtimes.contains("nvidia") ? -1 : 0;
}

namespace {

// An image's HEALTHCHECK (Config.Healthcheck: durations in nanoseconds, 0
// for Docker's default); none for NONE or an image without one.
std::optional<Healthcheck> ImageHealthcheck(const Json& config) {
  if (!config.is_object() || !config.value("Test", Json()).is_array()) return std::nullopt;
  Healthcheck check;
  for (const auto& word : config["Test"]) {
    if (word.is_string()) check.test.push_back(word.get<std::string>());
  }
  if (check.test.size() < 2 || (check.test[0] != "CMD" && check.test[0] != "CMD-SHELL")) return std::nullopt;
  auto seconds = [&](const char* key, double fallback) {
    const double ns = config.value(key, 0.0);
    return ns > 0 ? ns / 1e9 : fallback;
  };
  check.interval_seconds = seconds("Interval", 30);
  check.timeout_seconds = seconds("Timeout", 30);
  check.start_period_seconds = seconds("StartPeriod", 0);
  check.retries = config.value("Retries", 0) > 0 ? config.value("Retries", 3) : 3;
  return check;
}

}  // namespace

Result<ImageConfig> DockerBackend::PrepareImage(Spec* spec, const ProgressText& on_progress) {
  if (!spec->build_context.empty()) {
    auto built = BuildImage(spec->build_context, spec->run_id, spec->build_timeout_seconds, on_progress);
    if (!built.ok()) return built.status();
    spec->image = *built;
    spec->build_context.clear();
  }
  if (spec->image.empty()) return Status::BadConfig("sandbox: no image and no build context");
  const std::string inspect_path = "/images/" + Engine::Escape(spec->image) + "/json";
  auto inspect = engine_->CallJson("GET", inspect_path);
  ImageConfig config;
  if (!inspect.ok() && inspect.status().kind() == Kind::kNotFound) {
    // Missing: pulled, once even when many rollouts want it at the same time.
    std::lock_guard<std::mutex> lock(pull_mutex_);
    inspect = engine_->CallJson("GET", inspect_path);
    if (!inspect.ok() && inspect.status().kind() == Kind::kNotFound) {
      auto auth = RegistryAuth(spec->image, docker_config_);
      if (!auth.ok()) return auth.status();
      auto show = [&](const PullProgress& pull) {
        if (!on_progress || pull.total_bytes() == 0) return;
        on_progress(fmt::format("pull {:.1f}/{:.1f} MB", pull.done_bytes() / 1e6, pull.total_bytes() / 1e6));
      };
      FORGE_RETURN_IF_ERROR(PullImage(*engine_, spec->image, *auth, spec->build_timeout_seconds, show));
      config.pulled = true;
      inspect = engine_->CallJson("GET", inspect_path);
    }
  }
  if (!inspect.ok()) return inspect.status().Prefixed("inspect image " + spec->image);
  const Json& c = inspect->value("Config", Json::object());
  if (!c.is_object()) return config;
  auto strings = [&](const char* key) {
    std::vector<std::string> out;
    if (c.contains(key) && c[key].is_array()) {
      for (const auto& v : c[key]) if (v.is_string()) out.push_back(v.get<std::string>());
    }
    return out;
  };
  if (c.contains("WorkingDir") && c["WorkingDir"].is_string()) config.workdir = c["WorkingDir"].get<std::string>();
  if (c.contains("User") && c["User"].is_string()) config.user = c["User"].get<std::string>();
  config.entrypoint = strings("Entrypoint");
  config.cmd = strings("Cmd");
  config.healthcheck = ImageHealthcheck(c.value("Healthcheck", Json()));
  return config;
}

Result<std::string> DockerBackend::BuildImage(const std::string& context_dir, const std::string& run_id,
                                              double timeout_seconds, const ProgressText& on_progress) {
  auto context = BuildContext(context_dir);
  if (!context.ok()) return context.status();
  return Build(context_dir, std::move(*context), context_dir, run_id, timeout_seconds, on_progress);
}

Result<std::string> DockerBackend::BuildImageFrom(const std::string& what, std::string context,
                                                  const std::string& run_id, double timeout_seconds,
                                                  const ProgressText& on_progress) {
  return Build(what, std::move(context), "", run_id, timeout_seconds, on_progress);
}

Result<std::string> DockerBackend::Build(const std::string& what, std::string context, const std::string& bases_of,
                                         const std::string& run_id, double timeout_seconds,
                                         const ProgressText& on_progress) {
  BuildRequest request;
  request.context_dir = what;
  request.context = std::move(context);
  // Rollouts of a task want the same image: built once per run and context.
  const std::string key = Sha256Hex(run_id + '\n' + request.context);
  std::lock_guard<std::mutex> lock(build_mutex_);
  if (auto it = built_.find(key); it != built_.end()) {
    auto existing = engine_->Call("GET", "/images/" + Engine::Escape(it->second) + "/json");
    if (existing.ok() && existing->status == 200) return it->second;
  }
  request.labels = {{"forge.managed", "1"}, {"forge.run", run_id}};
  request.timeout_seconds = std::ceil(timeout_seconds);
  request.builder = builder_;
  auto registries = BuildRegistryConfig(docker_config_);
  if (!registries.ok()) return registries.status();
  request.registry_config = *registries;
  request.network_mode = BuildNetworkMode();
  if (builder_ == Builder::kBuildKit && !bases_of.empty()) {
    FORGE_RETURN_IF_ERROR(PullBaseImages(bases_of, request.timeout_seconds, on_progress));
  }
  auto tag = docker::BuildImage(*engine_, request, [&](const BuildProgress& progress) {
    if (!on_progress || progress.step().empty()) return;
    on_progress(fmt::format("build {}/{} {}", progress.steps_done(), std::max(progress.steps_done(),
                                                                              progress.steps_known()),
                            progress.step()));
  });
  if (!tag.ok()) return tag.status();
  built_[key] = *tag;
  return tag;
}

bool DockerBackend::HasBridge() {
  std::lock_guard<std::mutex> lock(info_mutex_);
  if (!has_bridge_) {
    auto bridge = engine_->Call("GET", "/networks/bridge");
    has_bridge_ = !(bridge.ok() && bridge->status == 404);
  }
  return *has_bridge_;
}

Status DockerBackend::PullBaseImages(const std::string& context_dir, double timeout_seconds,
                                     const ProgressText& on_progress) {
  std::ifstream in(context_dir + "/Dockerfile", std::ios::binary);
  std::ostringstream dockerfile;
  dockerfile << in.rdbuf();
  for (const std::string& image : DockerfileBaseImages(dockerfile.str())) {
    auto auth = RegistryAuth(image, docker_config_);
    if (!auth.ok()) return auth.status();
    if (auth->empty()) continue;  // BuildKit pulls what needs no credentials itself
    auto present = engine_->Call("GET", "/images/" + Engine::Escape(image) + "/json");
    if (present.ok() && present->status == 200) continue;
    auto show = [&](const PullProgress& pull) {
      if (on_progress && pull.total_bytes() > 0) {
        on_progress(fmt::format("pull {:.1f}/{:.1f} MB", pull.done_bytes() / 1e6, pull.total_bytes() / 1e6));
      }
    };
    FORGE_RETURN_IF_ERROR(PullImage(*engine_, image, *auth, timeout_seconds, show).Prefixed("build " + context_dir + ": FROM"));
  }
  return Status::Ok();
}

std::string DockerBackend::BuildNetworkMode() { return HasBridge() ? "" : "host"; }

std::string DockerBackend::NetworkMode(NetworkPolicy policy) {
  if (policy == NetworkPolicy::kHost) return "host";
  if (policy == NetworkPolicy::kOwn && HasBridge()) return "bridge";
  return "none";
}

Engine* EngineOf(Backend& backend) {
  auto* docker = dynamic_cast<DockerBackend*>(&backend);
  return docker != nullptr ? &docker->engine() : nullptr;
}

Engine* EngineOf(Sandbox& sandbox) {
  auto* docker = dynamic_cast<DockerSandbox*>(&sandbox);
  return docker != nullptr ? &docker->engine() : nullptr;
}

}  // namespace forge::sandbox::docker
