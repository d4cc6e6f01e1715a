#include "sandbox/local/local_backend.h"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "sandbox/local/memory_cgroup.h"

namespace forge::sandbox::local {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kMetaFile = ".forge-sandbox.json";

std::string DefaultRoot(const Env& env) {
  if (std::string root = env.VarOr("FORGE_LOCAL_ROOT", ""); !root.empty()) return root;
  return env.VarOr("TMPDIR", "/tmp") + "/forge-local";
}

// The host variables a command keeps (the rest of the environment is the spec's).
std::map<std::string, std::string> HostEnv(const Env& env) {
  std::map<std::string, std::string> kept;
  for (const char* name : {"PATH", "LANG", "TERM", "TMPDIR"}) {
    if (auto value = env.Var(name)) kept[name] = *value;
  }
  return kept;
}

bool SafeName(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

// Maps a sandbox path to the host: sandbox "/" is <dir>/fs. ".." cannot
// climb out (lexical normalisation first).
std::string HostPath(const std::string& dir, const std::string& sandbox_path) {
  fs::path p = fs::path("/" + sandbox_path).lexically_normal();
  return (fs::path(dir) / "fs" / p.relative_path()).string();
}

// The command line that runs argv under bubblewrap in sandbox dir (see the
// header); workdir is a host path inside dir.
std::vector<std::string> BubblewrapArgv(const std::string& dir, const std::string& workdir, const Json& meta,
                                        const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                                  "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                  "--bind", HostPath(dir, "/tmp"), "/tmp", "--bind", dir, dir};
  if (meta.value("own_network", false)) out.push_back("--unshare-net");
  for (const Json& m : meta.value("mounts", Json::array())) {
    out.push_back(m.value("read_only", true) ? "--ro-bind" : "--bind");
    out.push_back(m.value("host_path", ""));
    out.push_back(m.value("sandbox_path", ""));
  }
  out.insert(out.end(), {"--chdir", workdir, "--"});
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

struct ChildPlan;

class LocalSandbox : public Sandbox {
 public:
  LocalSandbox(std::string dir, Json meta, std::map<std::string, std::string> host_env)
      : meta_(std::move(meta)), host_env_(std::move(host_env)) {
    handle_.backend = BackendName(BackendKind::kLocal);
    handle_.id = std::move(dir);
  }
  const Handle& handle() const override { return handle_; }
  Result<ExecResult> Exec(const ExecRequest& request) override;
  Status CopyIn(const std::string& host_path, const std::string& dest_dir) override;
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override;
  Status Release() override;

 private:
  void PlanChild(const ExecRequest& request, ChildPlan& plan) const;

  Handle handle_;
  Json meta_;
  std::map<std::string, std::string> host_env_;
};

bool WriteAll(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const size_t size = std::strlen(text);
  const bool ok = write(fd, text, size) == static_cast<ssize_t>(size);
  close(fd);
  return ok;
}

// kProxyOnly: the child gets a network namespace of its own with only lo
// up, so the relay the launcher starts in it is the one way out. As root a
// plain CLONE_NEWNET; otherwise a user namespace too, mapping the caller's
// own ids, where the kernel allows unprivileged ones. Runs between fork and
// exec: async-signal-safe calls only, strings prepared by the caller.
bool EnterOwnNetwork(const char* uid_map, const char* gid_map) {
  if (unshare(CLONE_NEWNET) != 0) {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) return false;
    if (!WriteAll("/proc/self/setgroups", "deny") || !WriteAll("/proc/self/uid_map", uid_map) ||
        !WriteAll("/proc/self/gid_map", gid_map)) {
      return false;
    }
  }
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq request{};
  std::memcpy(request.ifr_name, "lo", 3);
  bool up = ioctl(fd, SIOCGIFFLAGS, &request) == 0;
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
  up = up && ioctl(fd, SIOCSIFFLAGS, &request) == 0;
  close(fd);
  return up;
}

void Drain(int fd, std::string& sink, size_t max_bytes, bool& truncated, bool& open) {
  char buffer[65536];
  ssize_t n = read(fd, buffer, sizeof buffer);
  if (n > 0) {
    size_t room = max_bytes > sink.size() ? max_bytes - sink.size() : 0;
    if (static_cast<size_t>(n) > room) truncated = true;
    sink.append(buffer, std::min(room, static_cast<size_t>(n)));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    open = false;
  }
}

// Everything the child needs, prepared before fork: after fork only
// async-signal-safe calls are allowed in a threaded program. Not copyable:
// argv and envp point into the strings.
struct ChildPlan {
  ChildPlan() = default;
  ChildPlan(const ChildPlan&) = delete;
  ChildPlan& operator=(const ChildPlan&) = delete;

  std::string workdir;
  std::vector<std::string> argv_strings, env_strings;
  std::vector<char*> argv, envp;
  std::string cgroup_procs;  // empty: no memory cgroup
  int64_t memory = 0, pids = 0;
  rlim_t cpu_seconds = RLIM_INFINITY;
  bool own_network = false;
  std::string uid_map, gid_map;
};

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The child's stdin, stdout and stderr pipes; whatever is still open closes
// with the object.
struct ChildPipes {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};

  ChildPipes() = default;
  ChildPipes(const ChildPipes&) = delete;
  ChildPipes& operator=(const ChildPipes&) = delete;
  ~ChildPipes() {
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]}) Close(*fd);
  }
  Status Open() {
    for (int* pair : {in, out, err}) {
      if (pipe2(pair, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
    }
    return Status::Ok();
  }
  static void Close(int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

constexpr char kNoNamespace[] =
    "forge-relay: cannot make a network namespace for --network proxy-only on the local "
    "backend (needs root or unprivileged user namespaces)\n";

// The forked child: joins the memory cgroup, wires the pipes, enters its own
// network if asked, sets its limits and execs. Never returns.
[[noreturn]] void RunChild(const ChildPlan& plan, const ChildPipes& pipes) {
  setpgid(0, 0);
  // Into the sandbox's memory cgroup first (memory_cgroup.h), before a
  // user namespace could take the right to.
  bool in_cgroup = false;
  if (!plan.cgroup_procs.empty()) {
    const int fd = open(plan.cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
    in_cgroup = fd >= 0 && write(fd, "0", 1) == 1;
    if (fd >= 0) close(fd);
  }
  dup2(pipes.in[0], 0);
  dup2(pipes.out[1], 1);
  dup2(pipes.err[1], 2);
  if (plan.own_network && !EnterOwnNetwork(plan.uid_map.c_str(), plan.gid_map.c_str())) {
    ssize_t ignored = write(2, kNoNamespace, sizeof kNoNamespace - 1);
    (void)ignored;
    _exit(kNetworkSetupExit);
  }
  if (chdir(plan.workdir.c_str()) != 0) _exit(126);
  struct rlimit lim;
  // Without a cgroup, RLIMIT_DATA, not RLIMIT_AS: it counts the private
  // writable memory a process maps, not the address space it reserves. V8
  // reserves gigabytes it never touches: under RLIMIT_AS, Node.js 24 does
  // not start at 1 GB ("Failed to reserve virtual memory for CodeRange"),
  // and Gemini CLI's WebAssembly HTTP parser failed at 4 GB
  // (docs/harnesses-codex-gemini.md).
  if (plan.memory > 0 && !in_cgroup) {
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(plan.memory);
    setrlimit(RLIMIT_DATA, &lim);
  }
  if (plan.pids > 0) {
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(plan.pids);
    setrlimit(RLIMIT_NPROC, &lim);
  }
  if (plan.cpu_seconds != RLIM_INFINITY) {
    lim.rlim_cur = lim.rlim_max = plan.cpu_seconds;
    setrlimit(RLIMIT_CPU, &lim);
  }
  signal(SIGPIPE, SIG_DFL);
  execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
  _exit(127);
}

// Reads the child's stdout and stderr until both close, the deadline passes
// or the request is cancelled (then the child's group is killed). Returns
// whether it was cancelled.
bool CollectOutput(pid_t pid, const ChildPipes& pipes, const ExecRequest& request, Clock::time_point started,
                   ExecResult& result) {
  bool out_open = true, err_open = true;
  const bool has_deadline = request.timeout_seconds > 0;
  const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(request.timeout_seconds));
  while (out_open || err_open) {
    pollfd fds[2] = {{out_open ? pipes.out[0] : -1, POLLIN, 0}, {err_open ? pipes.err[0] : -1, POLLIN, 0}};
    if (poll(fds, 2, 100) > 0) {
      if (fds[0].revents) Drain(pipes.out[0], result.stdout_data, request.max_output_bytes, result.truncated, out_open);
      if (fds[1].revents) Drain(pipes.err[0], result.stderr_data, request.max_output_bytes, result.truncated, err_open);
    }
    const bool cancelled = request.cancel && request.cancel->requested();
    if (has_deadline && Clock::now() >= deadline) result.timed_out = true;
    if (cancelled || result.timed_out) {
      kill(-pid, SIGKILL);
      return cancelled;
    }
  }
  return false;
}

// The child's plan: its command (under bubblewrap when asked), environment,
// working directory and limits, from the sandbox's spec and the request.
void LocalSandbox::PlanChild(const ExecRequest& request, ChildPlan& plan) const {
  plan.workdir = HostPath(handle_.id, request.workdir.empty() ? meta_.value("workdir", "/work") : request.workdir);
  std::error_code ec;
  fs::create_directories(plan.workdir, ec);
  std::map<std::string, std::string> env = host_env_;
  env["HOME"] = plan.workdir;
  env["FORGE_SANDBOX_ROOT"] = handle_.id + "/fs";
  const Json spec_env = meta_.value("env", Json::object());  // kept: items() refers to it
  for (const auto& [k, v] : spec_env.items()) env[k] = v.get<std::string>();
  for (const auto& [k, v] : request.env) env[k] = v;
  for (const auto& [k, v] : env) plan.env_strings.push_back(k + "=" + v);
  plan.envp = Pointers(plan.env_strings);

  const bool bubblewrap = meta_.value("bubblewrap", false);
  if (bubblewrap) fs::create_directories(HostPath(handle_.id, "/tmp"), ec);
  plan.argv_strings = bubblewrap ? BubblewrapArgv(handle_.id, plan.workdir, meta_, request.argv) : request.argv;
  plan.argv = Pointers(plan.argv_strings);

  plan.memory = meta_.value("memory_bytes", int64_t{0});
  const std::string cgroup = meta_.value("memory_cgroup", std::string());
  if (!cgroup.empty()) plan.cgroup_procs = CgroupProcsFile(cgroup);
  plan.pids = meta_.value("pids", int64_t{0});
  const double cpus = meta_.value("cpus", 0.0);
  if (request.timeout_seconds > 0 && cpus > 0) {
    plan.cpu_seconds = static_cast<rlim_t>(std::ceil(cpus * request.timeout_seconds)) + 1;
  }
  plan.own_network = meta_.value("network", std::string()) == "proxy-only";
  plan.uid_map = std::to_string(getuid()) + " " + std::to_string(getuid()) + " 1\n";
  plan.gid_map = std::to_string(getgid()) + " " + std::to_string(getgid()) + " 1\n";
}

Result<ExecResult> LocalSandbox::Exec(const ExecRequest& request) {
  if (request.argv.empty()) return Status::InvalidArgument("exec: empty command");
  ChildPlan plan;
  PlanChild(request, plan);
  ChildPipes pipes;
  if (Status s = pipes.Open(); !s.ok()) return s;
  const auto started = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) return Status::Unavailable(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) RunChild(plan, pipes);
  setpgid(pid, pid);  // also in the parent: no race with the kill below
  ChildPipes::Close(pipes.out[1]);
  ChildPipes::Close(pipes.err[1]);
  ChildPipes::Close(pipes.in[0]);
  // stdin: small inputs fit the pipe buffer; write what fits, then close.
  if (!request.stdin_data.empty()) {
    fcntl(pipes.in[1], F_SETFL, O_NONBLOCK);
    ssize_t ignored = write(pipes.in[1], request.stdin_data.data(), request.stdin_data.size());
    (void)ignored;
  }
  ChildPipes::Close(pipes.in[1]);

  ExecResult result;
  const bool cancelled = CollectOutput(pid, pipes, request, started, result);
  ChildPipes::Close(pipes.out[0]);
  ChildPipes::Close(pipes.err[0]);
  int status = 0;
  // The direct child may already be gone with grandchildren holding the
  // pipes; either way the whole group goes when the leader is reaped.
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  kill(-pid, SIGKILL);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) result.timed_out = true;
  result.seconds = SecondsSince(started);
  if (cancelled) return Status::Cancelled("exec cancelled");
  return result;
}

Status LocalSandbox::CopyIn(const std::string& host_path, const std::string& dest_dir) {
  std::error_code ec;
  const std::string dest = HostPath(handle_.id, dest_dir);
  fs::create_directories(dest, ec);
  if (ec) return Status::CannotCreate(dest + ": " + ec.message());
  if (!fs::exists(host_path, ec)) return Status::NotFound(host_path + ": no such file or directory");
  const auto options = fs::copy_options::recursive | fs::copy_options::overwrite_existing |
                       fs::copy_options::copy_symlinks;
  if (fs::is_directory(host_path, ec)) {
    fs::copy(host_path, dest, options, ec);
  } else {
    fs::copy(host_path, fs::path(dest) / fs::path(host_path).filename(), options, ec);
  }
  if (ec) return Status::IoError("copy " + host_path + " to " + dest + ": " + ec.message());
  return Status::Ok();
}

Result<std::string> LocalSandbox::ReadFile(const std::string& path, size_t max_bytes) {
  const std::string host = HostPath(handle_.id, path);
  std::ifstream in(host, std::ios::binary);
  if (!in) return Status::NotFound(path + ": no such file in the sandbox");
  std::string content(max_bytes, '\0');
  in.read(content.data(), static_cast<std::streamsize>(max_bytes));
  content.resize(static_cast<size_t>(in.gcount()));
  return content;
}

Status LocalSandbox::Release() {
  RemoveMemoryCgroup(meta_.value("memory_cgroup", std::string()));
  std::error_code ec;
  fs::remove_all(handle_.id, ec);
  if (ec) return Status::IoError("remove " + handle_.id + ": " + ec.message());
  return Status::Ok();
}

Result<Json> ReadMeta(const std::string& dir) {
  std::ifstream in(dir + "/" + kMetaFile);
  if (!in) return Status::NotFound(dir + ": not a forge local sandbox");
  std::stringstream text;
  text << in.rdbuf();
  auto meta = Json::parse(text.str(), nullptr, false);
  if (!meta.is_object()) return Status::InvalidData(dir + "/" + kMetaFile + ": not JSON");
  return meta;
}

}  // namespace

LocalBackend::LocalBackend(const Env& env, std::string root, bool bubblewrap)
    : root_(root.empty() ? DefaultRoot(env) : std::move(root)), bubblewrap_(bubblewrap), host_env_(HostEnv(env)) {}

Status LocalBackend::ProbeBubblewrap() {
  std::string output;
  std::FILE* p = popen("bwrap --die-with-parent --unshare-pid --unshare-ipc --unshare-uts --unshare-net "
                       "--ro-bind / / --dev /dev --proc /proc true 2>&1", "r");
  if (!p) return Status::BadConfig(std::string("--bubblewrap: cannot run bwrap: ") + std::strerror(errno));
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, p)) output.append(buffer, n);
  int status = pclose(p);
  if (status == 0) return Status::Ok();
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return Status::BadConfig("--bubblewrap: bwrap is not on PATH (Debian: apt-get install bubblewrap)");
  }
  return Status::BadConfig("--bubblewrap: bwrap cannot make a sandbox here: " +
                        (output.empty() ? "exit status " + std::to_string(status) : output));
}

Result<std::unique_ptr<Sandbox>> LocalBackend::Create(const Spec& spec) {
  if (!SafeName(spec.run_id) || !SafeName(spec.rollout_id)) {
    return Status::BadConfig("local sandbox: run and rollout ids must be [A-Za-z0-9._-]+");
  }
  const std::string dir = root_ + "/" + spec.run_id + "/" + spec.rollout_id;
  std::error_code ec;
  fs::remove_all(dir, ec);  // a leftover of a crashed launcher
  fs::create_directories(HostPath(dir, spec.workdir), ec);
  if (!ec) fs::create_directories(HostPath(dir, "/tmp"), ec);
  if (ec) return Status::CannotCreate(dir + ": " + ec.message());
  Json meta = {{"run_id", spec.run_id}, {"rollout_id", spec.rollout_id},
               {"created", static_cast<int64_t>(std::time(nullptr))},
               {"workdir", spec.workdir}, {"env", spec.env},
               {"memory_bytes", spec.limits.memory_bytes}, {"pids", spec.limits.pids},
               {"cpus", spec.limits.cpus}, {"labels", spec.labels},
               {"network", spec.network == NetworkPolicy::kProxyOnly ? "proxy-only" : ""},
               {"bubblewrap", bubblewrap_},
               {"own_network", spec.network == NetworkPolicy::kNone || spec.network == NetworkPolicy::kLoopback}};
  Json mounts = Json::array();
  for (const Mount& m : spec.mounts) {
    mounts.push_back({{"host_path", m.host_path}, {"sandbox_path", m.sandbox_path}, {"read_only", m.read_only}});
  }
  meta["mounts"] = std::move(mounts);
  meta["memory_cgroup"] = CreateMemoryCgroup(spec.run_id + "." + spec.rollout_id, spec.limits.memory_bytes);
  std::ofstream out(dir + "/" + kMetaFile);
  out << meta.dump() << "\n";
  if (!out) return Status::CannotCreate(dir + "/" + kMetaFile + ": write failed");
  return std::unique_ptr<Sandbox>(std::make_unique<LocalSandbox>(dir, std::move(meta), host_env_));
}

Result<std::unique_ptr<Sandbox>> LocalBackend::Attach(const Handle& handle) {
  if (!handle.Is(BackendKind::kLocal)) {
    return Status::BadConfig("sandbox handle is for backend '" + handle.backend + "', not local");
  }
  auto meta = ReadMeta(handle.id);
  if (!meta.ok()) return meta.status();
  return std::unique_ptr<Sandbox>(std::make_unique<LocalSandbox>(handle.id, std::move(*meta), host_env_));
}

Result<int> LocalBackend::Collect(const std::string& run_id, int64_t older_than_seconds) {
  std::error_code ec;
  int removed = 0;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (!fs::is_directory(root_, ec)) return 0;
  for (const auto& run_dir : fs::directory_iterator(root_, ec)) {
    if (!run_id.empty() && run_dir.path().filename() != run_id) continue;
    std::error_code inner;
    for (const auto& box : fs::directory_iterator(run_dir.path(), inner)) {
      auto meta = ReadMeta(box.path().string());
      if (!meta.ok()) continue;
      if (older_than_seconds > 0 && now - meta->value("created", now) < older_than_seconds) continue;
      RemoveMemoryCgroup(meta->value("memory_cgroup", std::string()));
      fs::remove_all(box.path(), inner);
      if (!inner) ++removed;
    }
    fs::remove(run_dir.path(), inner);  // only if now empty
  }
  return removed;
}

}  // namespace forge::sandbox::local
