#include "sandbox/docker/docker_backend.h"

#include <openssl/evp.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <thread>

#include "sandbox/docker/stream_demux.h"
#include "sandbox/tar.h"

namespace forge::sandbox::docker {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string FiltersParam(const Json& filters) { return Engine::Escape(filters.dump()); }

std::string ArchivePath(const std::string& dir) {
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path.empty() ? "/" : path;
}

// PID 1: sleeps in 10 s steps until the lifetime is over, so a container
// whose launcher died exits by itself. A shell rather than a bare `sleep`
// because PID 1 inherits every orphan: the shell's wait reaps them, where a
// bare sleep would collect the zombies of every killed harness. A deadline
// kill (`kill -KILL -1`) may cut one step short; the loop just goes on.
Json KeepAlive(int64_t lifetime) {
  const int64_t steps = (lifetime + 9) / 10;
  return {"/bin/sh", "-c",
          "trap 'exit 0' TERM; i=0; while [ $i -lt " + std::to_string(steps) +
              " ]; do sleep 10 & wait $!; i=$((i+1)); done",
          "forge-keepalive"};
}

class DockerSandbox : public Sandbox {
 public:
  DockerSandbox(std::shared_ptr<Engine> engine, std::string id, std::string workdir,
                std::string user)
      : engine_(std::move(engine)), workdir_(std::move(workdir)), user_(std::move(user)) {
    handle_.backend = "docker";
    handle_.id = std::move(id);
  }

  const Handle& handle() const override { return handle_; }

  Result<ExecResult> Exec(const ExecRequest& request) override;
  Status CopyIn(const std::string& host_path, const std::string& dest_dir) override;
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override;
  Status Release() override;

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

bool DockerSandbox::OomSince(double since) {
  // The engine records an "oom" event when the cgroup's OOM killer fires,
  // even for a process other than PID 1 (State.OOMKilled only covers PID 1).
  Json filters = {{"container", {handle_.id}}, {"event", {"oom"}}};
  char range[96];
  std::snprintf(range, sizeof range, "since=%.3f&until=%.3f", since - 1, WallNow() + 0.5);
  auto response = engine_->Call(
      "GET", "/events?" + std::string(range) + "&filters=" + FiltersParam(filters), "", {"", 10});
  if (response.ok() && response->status == 200 && response->body.find("\"oom\"") != std::string::npos) {
    return true;
  }
  auto inspect = engine_->CallJson("GET", "/containers/" + handle_.id + "/json");
  return inspect.ok() && inspect->value("/State/OOMKilled"_json_pointer, false);
}

Result<ExecResult> DockerSandbox::Exec(const ExecRequest& request) {
  if (request.argv.empty()) return Status::Usage("exec: empty command");
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

  const bool has_deadline = request.timeout_seconds > 0;
  const auto deadline =
      started + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(has_deadline ? request.timeout_seconds : 0));
  bool deadline_hit = false;
  bool cancelled = false;
  auto keep_going = [&] {
    if (request.cancel && request.cancel->load()) {
      cancelled = true;
      return false;
    }
    if (has_deadline && Clock::now() >= deadline) {
      deadline_hit = true;
      return false;
    }
    return true;
  };
  StreamDemux demux(request.max_output_bytes);
  auto streamed = engine_->Stream(
      "POST", "/exec/" + *exec_id + "/start", Json{{"Detach", false}, {"Tty", false}}.dump(),
      [&](std::string_view data) { demux.Feed(data); }, keep_going);

  ExecResult result;
  const bool aborted = !streamed.ok() && streamed.status().code() == ExitCode::kInterrupted;
  if (!streamed.ok() && !aborted) return streamed.status();
  if (streamed.ok() && *streamed != 200 && *streamed != 101) {
    return Status::TempFail("Docker engine: exec start answered HTTP " + std::to_string(*streamed));
  }
  if (aborted) {
    FORGE_RETURN_IF_ERROR(KillAllButInit(user));
    result.timed_out = deadline_hit;
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
      engine_->Call("POST", "/containers/" + handle_.id + "/kill?signal=SIGKILL");
      return Status::TempFail("exec " + *exec_id + " did not stop; container killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(i < 10 ? 5 : 50));
  }
  result.exit_code = info["ExitCode"].is_number() ? info["ExitCode"].get<int>() : -1;
  result.stdout_data = std::move(demux.out());
  result.stderr_data = std::move(demux.err());
  result.truncated = demux.truncated();
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (!result.timed_out && !cancelled && result.exit_code == 137) {
    result.out_of_memory = OomSince(started_wall);
  }
  if (cancelled) return Status::Cancelled("exec cancelled");
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
      return Status::Io("mkdir -p " + dir + " in the sandbox failed: " + made->stderr_data);
    }
    response = put();
    if (!response.ok()) return response.status();
  }
  if (response->status != 200) return StatusForHttp("PUT archive " + dir, *response);
  return Status::Ok();
}

Status DockerSandbox::CopyIn(const std::string& host_path, const std::string& dest_dir) {
  std::error_code ec;
  TarWriter tar;
  if (std::filesystem::is_directory(host_path, ec)) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(host_path, ec)) {
      names.push_back(entry.path().filename().string());
    }
    if (ec) return Status::NoInput(host_path + ": " + ec.message());
    std::sort(names.begin(), names.end());
    for (const auto& name : names) FORGE_RETURN_IF_ERROR(tar.AddHostPath(host_path + "/" + name, name));
  } else {
    FORGE_RETURN_IF_ERROR(tar.AddHostPath(host_path, std::filesystem::path(host_path).filename().string()));
  }
  return PutArchive(ArchivePath(dest_dir), tar.Finish()).Prefixed("copy " + host_path);
}

Result<std::string> DockerSandbox::ReadFile(const std::string& path, size_t max_bytes) {
  auto response = engine_->Call(
      "GET", "/containers/" + handle_.id + "/archive?path=" + Engine::Escape(path), "", {"", 300});
  if (!response.ok()) return response.status();
  if (response->status == 404) return Status::NoInput(path + ": no such file in the sandbox");
  if (response->status != 200) return StatusForHttp("GET archive " + path, *response);
  auto entry = FirstFileInTar(response->body, max_bytes);
  if (!entry.ok()) return entry.status().Prefixed(path);
  return std::move(entry->content);
}

Status DockerSandbox::Release() {
  auto response = engine_->Call("DELETE", "/containers/" + handle_.id + "?force=1&v=1");
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

DockerBackend::DockerBackend(std::shared_ptr<Engine> engine) : engine_(std::move(engine)) {}

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
      return Status::Config("sandbox mount " + m.host_path + ":" + m.sandbox_path +
                            ": both paths must be absolute");
    }
    out.push_back({{"Type", "bind"},
                   {"Source", m.host_path},
                   {"Target", m.sandbox_path},
                   {"ReadOnly", m.read_only}});
  }
  return out;
}

Result<std::unique_ptr<Sandbox>> DockerBackend::Create(const Spec& spec) {
  std::string image = spec.image;
  if (!spec.build_context.empty()) {
    auto built = BuildImage(spec.build_context, spec.run_id);
    if (!built.ok()) return built.status();
    image = *built;
  }
  if (image.empty()) return Status::Config("sandbox: no image and no build context");
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
      {"CapDrop", {"ALL"}},
      {"SecurityOpt", {"no-new-privileges"}},
      {"NetworkMode", spec.network == NetworkPolicy::kHost ? "host" : "none"},
      {"AutoRemove", false},
      {"Init", false},  // PID 1 must be the keep-alive: `kill -1` spares only it
  };
  Json body = {{"Image", image},
               {"Entrypoint", KeepAlive(lifetime)},
               {"Cmd", Json::array()},
               {"Env", env},
               {"WorkingDir", spec.workdir},
               {"Labels", labels},
               {"Tty", false},
               {"OpenStdin", false},
               {"HostConfig", host}};
  if (!spec.user.empty()) body["User"] = spec.user;
  if (!spec.mounts.empty()) {
    auto mounts = BindMounts(spec.mounts);
    if (!mounts.ok()) return mounts.status();
    body["HostConfig"]["Mounts"] = std::move(*mounts);
  }
  std::string name = spec.rollout_id.empty() ? "" : "forge-" + spec.rollout_id;
  std::string path = "/containers/create" + (name.empty() ? "" : "?name=" + Engine::Escape(name));
  auto created = engine_->CallJson("POST", path, body);
  if (!created.ok() && created.status().code() == ExitCode::kTempFail && !name.empty() &&
      created.status().message().find("Conflict") != std::string::npos) {
    // A container of the same rollout left by a crashed launcher: replace it.
    engine_->Call("DELETE", "/containers/" + Engine::Escape(name) + "?force=1&v=1");
    created = engine_->CallJson("POST", path, body);
  }
  if (!created.ok()) {
    if (created.status().code() == ExitCode::kNoInput) {
      return Status::Unavailable(created.status().message() + " (image " + image +
                                 " missing: pull or build it first)");
    }
    return created.status();
  }
  std::string id = (*created)["Id"].get<std::string>();
  auto sandbox = std::make_unique<DockerSandbox>(engine_, id, spec.workdir, spec.user);
  auto started = engine_->CallJson("POST", "/containers/" + id + "/start");
  if (!started.ok()) {
    sandbox->Release();
    return started.status().Prefixed("start container");
  }
  return std::unique_ptr<Sandbox>(std::move(sandbox));
}

Result<std::unique_ptr<Sandbox>> DockerBackend::Attach(const Handle& handle) {
  if (handle.backend != "docker") {
    return Status::Config("sandbox handle is for backend '" + handle.backend + "', not docker");
  }
  auto inspect = engine_->CallJson("GET", "/containers/" + Engine::Escape(handle.id) + "/json");
  if (!inspect.ok()) return inspect.status().Prefixed("attach " + handle.id);
  if (inspect->value("/Config/Labels/forge.managed"_json_pointer, std::string()) != "1") {
    return Status::Config("container " + handle.id + " was not created by forge");
  }
  if (!inspect->value("/State/Running"_json_pointer, false)) {
    return Status::Unavailable("container " + handle.id + " is not running (" +
                               inspect->value("/State/Status"_json_pointer, std::string("?")) + ")");
  }
  return std::unique_ptr<Sandbox>(std::make_unique<DockerSandbox>(
      engine_, (*inspect)["Id"].get<std::string>(),
      inspect->value("/Config/WorkingDir"_json_pointer, std::string("/")),
      inspect->value("/Config/User"_json_pointer, std::string())));
}

Result<int> DockerBackend::Collect(const std::string& run_id, int64_t older_than_seconds) {
  Json label = Json::array({"forge.managed=1"});
  if (!run_id.empty()) label.push_back("forge.run=" + run_id);
  auto listed = engine_->CallJson("GET", "/containers/json?all=1&filters=" +
                                             FiltersParam(Json{{"label", label}}));
  if (!listed.ok()) return listed.status();
  const int64_t now = static_cast<int64_t>(WallNow());
  int removed = 0;
  for (const auto& container : *listed) {
    int64_t created = container.value("Created", int64_t{0});
    if (older_than_seconds > 0 && now - created < older_than_seconds) continue;
    const std::string id = container.value("Id", std::string());
    auto response = engine_->Call("DELETE", "/containers/" + id + "?force=1&v=1");
    if (!response.ok()) return response.status();
    if (response->status == 204 || response->status == 404) {
      ++removed;
    } else if (response->status != 409) {
      return StatusForHttp("remove container " + id, *response);
    }
  }
  return removed;
}

Result<std::string> DockerBackend::BuildImage(const std::string& context_dir,
                                              const std::string& run_id) {
  TarWriter tar;
  std::error_code ec;
  if (!std::filesystem::exists(context_dir + "/Dockerfile", ec)) {
    return Status::DataErr(context_dir + ": no Dockerfile to build");
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(context_dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  if (ec) return Status::NoInput(context_dir + ": " + ec.message());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) FORGE_RETURN_IF_ERROR(tar.AddHostPath(context_dir + "/" + name, name));
  std::string context = tar.Finish();

  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  EVP_Digest(context.data(), context.size(), digest, &digest_len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < 8; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  const std::string tag = "forge-task:" + hex;

  std::lock_guard<std::mutex> lock(build_mutex_);
  auto existing = engine_->Call("GET", "/images/" + Engine::Escape(tag) + "/json");
  if (existing.ok() && existing->status == 200) return tag;
  Json labels = {{"forge.managed", "1"}, {"forge.run", run_id}};
  std::string path = "/build?t=" + Engine::Escape(tag) + "&rm=1&forcerm=1&labels=" +
                     Engine::Escape(labels.dump());
  auto response = engine_->Call("POST", path, context, {"application/x-tar", 3600});
  if (!response.ok()) return response.status();
  if (response->status != 200) return StatusForHttp("build " + context_dir, *response);
  // The answer is JSON lines; an "error" line means the build failed even
  // though the status was 200.
  size_t pos = 0;
  std::string last_output;
  while (pos < response->body.size()) {
    size_t end = response->body.find('\n', pos);
    if (end == std::string::npos) end = response->body.size();
    auto line = Json::parse(response->body.substr(pos, end - pos), nullptr, false);
    pos = end + 1;
    if (!line.is_object()) continue;
    if (line.contains("error")) {
      return Status::DataErr("build " + context_dir + ": " + line.value("error", std::string()) +
                             (last_output.empty() ? "" : " (after: " + last_output + ")"));
    }
    if (line.contains("stream")) {
      std::string text = line.value("stream", std::string());
      while (!text.empty() && text.back() == '\n') text.pop_back();
      if (!text.empty()) last_output = text;
    }
  }
  return tag;
}

}  // namespace forge::sandbox::docker
