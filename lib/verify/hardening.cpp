#include "verify/hardening.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <random>

#if __has_include("sandbox/docker/docker_backend.h")
#include "sandbox/docker/docker_backend.h"
#define FORGE_VERIFY_HAVE_DOCKER_ENGINE 1
#endif

namespace forge::verify {
namespace {

constexpr std::array<std::string_view, 7> kBinDirs = {
    "/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/root/.local/bin"};
// Every verifier starts through a shell; `env` is how scripts find interpreters.
constexpr std::array<std::string_view, 6> kShells = {"sh", "bash", "dash", "ash", "busybox", "env"};
// Read by pytest when it looks for its root above /tests.
constexpr std::array<std::string_view, 5> kPytestRootFiles = {"/conftest.py", "/pytest.ini", "/pyproject.toml",
                                                              "/tox.ini", "/setup.cfg"};

bool Under(std::string_view path, std::string_view dir) {
  return path == dir || (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view Dirname(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  return slash == 0 ? std::string_view("/") : path.substr(0, slash);
}

bool IsBinDir(std::string_view dir) {
  return std::find(kBinDirs.begin(), kBinDirs.end(), dir) != kBinDirs.end();
}

// The script's words, split at blanks, quotes and shell operators.
std::vector<std::string> Words(std::string_view script) {
  std::vector<std::string> words;
  std::string word;
  for (char c : script) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::string_view(";|&()<>`\"'{}").find(c) != std::string_view::npos) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

bool CommandLike(std::string_view word) {
  if (word.empty() || word.size() > 64 || word[0] == '-') return false;
  return std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '-';
  });
}

std::string HomeExpanded(const std::string& path) {
  for (std::string_view home : {"$HOME", "${HOME}", "~"}) {
    if (path == home) return "/root";
    if (path.starts_with(std::string(home) + "/")) return "/root" + path.substr(home.size());
  }
  return path;
}

const char* KindName(int kind) { return kind == 1 ? "added" : kind == 2 ? "deleted" : "modified"; }

// Why a change touches the verifier's toolchain; empty when it does not.
std::string WhyToolchain(const FileChange& change, const Toolchain& toolchain, const ShadowCheck& exists_elsewhere) {
  const std::string& p = change.path;
  if (Under(p, "/tests")) return "the verifier's tests directory";
  if (Under(p, "/logs/verifier")) return "the verifier's reward directory";
  if (toolchain.sourced.count(p)) return "a file the test script sources";
  if (p == "/etc/ld.so.preload") return "the loader's preload list";
  const std::string_view base = Basename(p), dir = Dirname(p);
  if (base == "sitecustomize.py" || base == "usercustomize.py") return "a Python start-up hook";
  if (std::find(kPytestRootFiles.begin(), kPytestRootFiles.end(), p) != kPytestRootFiles.end()) {
    return "pytest configuration above /tests";
  }
  if (IsBinDir(dir) && std::find(kShells.begin(), kShells.end(), base) != kShells.end()) {
    return "a shell every verifier starts through";
  }
  if (IsBinDir(dir) && toolchain.commands.count(std::string(base))) {
    if (change.kind != 1) return "a command the verifier runs";
    if (exists_elsewhere && exists_elsewhere(std::string(base), std::string(dir))) {
      return "a command the verifier runs, shadowed by an added one";
    }
    return "";
  }
  const bool lib = dir.starts_with("/lib") || dir.starts_with("/usr/lib");
  if (lib && change.kind != 1 &&
      (base.starts_with("ld-linux") || base.starts_with("ld-musl") || base.starts_with("libc.so") ||
       base.starts_with("libc-"))) {
    return "the C library or loader";
  }
  return "";
}

std::string RandomTag() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

}  // namespace

Toolchain ToolchainOfScript(std::string_view script) {
  Toolchain t;
  for (auto shell : kShells) t.commands.insert(std::string(shell));
  const auto words = Words(script);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if ((w == "source" || w == ".") && i + 1 < words.size()) {
      std::string path = HomeExpanded(words[i + 1]);
      if (!path.empty() && path[0] == '/') t.sourced.insert(path);
    }
    std::string_view name = w[0] == '/' ? Basename(w) : std::string_view(w);
    if (CommandLike(name)) t.commands.insert(std::string(name));
  }
  return t;
}

Json ToolchainChanges(const std::vector<FileChange>& changes, const Toolchain& toolchain,
                      const ShadowCheck& exists_elsewhere) {
  Json out = Json::array();
  for (const auto& change : changes) {
    std::string why = WhyToolchain(change, toolchain, exists_elsewhere);
    if (!why.empty()) out.push_back({{"path", change.path}, {"kind", KindName(change.kind)}, {"why", why}});
  }
  return out;
}

std::string SweepScript(bool stop_processes, bool clear_harbor_dirs, const std::string& tag) {
  // Builtins only while processes are stopped (`kill` must not be a child
  // that kill -1 would take with it): every process but PID 1 and this shell,
  // again until a pass finds none alive (a forking loop can outrun one pass).
  std::string s = "me=$$\n";
  if (stop_processes) {
    s += "rounds=0; stopped=-1\n"
         "while :; do\n"
         "  left=0\n"
         "  for d in /proc/[0-9]*; do\n"
         "    p=${d#/proc/}\n"
         "    if [ \"$p\" = 1 ] || [ \"$p\" = \"$me\" ]; then continue; fi\n"
         "    s=''; read -r s 2>/dev/null < \"$d/stat\" || continue\n"
         "    case \"$s\" in *') Z '*|*') X '*) continue;; esac\n"
         "    left=$((left+1))\n"
         "  done\n"
         "  [ \"$stopped\" = -1 ] && stopped=$left\n"
         "  [ \"$left\" = 0 ] && break\n"
         "  rounds=$((rounds+1))\n"
         "  if [ \"$rounds\" -gt 100 ]; then echo \"forge-sweep: left $left\"; exit 3; fi\n"
         "  kill -KILL -1 2>/dev/null\n"
         "done\n"
         "echo \"forge-sweep: stopped $stopped\"\n";
  }
  if (clear_harbor_dirs) {
    // A rename inside the same parent needs no permission on the directory
    // moved, and moves a symlink rather than what it points at.
    s += "aside() {\n"
         "  if [ -e \"$1\" ] || [ -L \"$1\" ]; then\n"
         "    err=$(mv -f -- \"$1\" \"$2\" 2>&1) || { echo \"forge-sweep: cannot clear $1: $err\"; exit 4; }\n"
         "    rm -rf -- \"$2\" 2>/dev/null\n"
         "  fi\n"
         "}\n"
         "if [ -L /logs ] || { [ -e /logs ] && [ ! -d /logs ]; }; then aside /logs /.forge-old-logs-" + tag + "; fi\n"
         "aside /tests /.forge-old-tests-" + tag + "\n"
         "aside /logs/verifier /logs/.forge-old-verifier-" + tag + "\n"
         "err=$(mkdir -p /logs/verifier /tests 2>&1 && chmod 0777 /logs/verifier 2>&1) ||"
         " { echo \"forge-sweep: cannot make /tests and /logs/verifier: $err\"; exit 4; }\n"
         "for d in /tests /logs/verifier; do\n"
         "  if [ -L \"$d\" ] || [ ! -d \"$d\" ]; then echo \"forge-sweep: $d is not a fresh directory\"; exit 4; fi\n"
         "done\n"
         "df -Pk /tests /logs/verifier 2>/dev/null | while read -r fs size used avail rest; do\n"
         "  case \"$avail\" in ''|*[!0-9]*) ;; *) echo \"forge-sweep: avail $avail\";; esac\n"
         "done\n";
  }
  s += "echo \"forge-sweep: done " + tag + "\"\n";
  return s;
}

SweepReport ParseSweepOutput(std::string_view out, int exit_code) {
  SweepReport r;
  bool done = false;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string_view::npos) end = out.size();
    std::string_view line = out.substr(pos, end - pos);
    pos = end + 1;
    if (!line.starts_with("forge-sweep: ")) continue;
    line.remove_prefix(13);
    if (line.starts_with("stopped ")) {
      r.stopped = std::atoi(std::string(line.substr(8)).c_str());
    } else if (line.starts_with("avail ")) {
      int64_t kib = std::atoll(std::string(line.substr(6)).c_str());
      if (r.min_avail_kib < 0 || kib < r.min_avail_kib) r.min_avail_kib = kib;
    } else if (line.starts_with("left ")) {
      r.left = std::atoi(std::string(line.substr(5)).c_str());
      r.fault = fmt::format("{} process(es) of the agent's would not stop", r.left);
    } else if (line.starts_with("done ")) {
      done = true;
    } else if (r.fault.empty()) {
      r.fault = std::string(line);
    }
  }
  if (!r.fault.empty()) return r;
  if (exit_code != 0 || !done) {
    r.fault = fmt::format("the sandbox's /bin/sh did not run forge's sweep (exit status {}{})", exit_code,
                          done ? "" : ", no end line");
  } else if (r.min_avail_kib >= 0 && r.min_avail_kib < kMinFreeKib) {
    r.fault = fmt::format("the file system of /tests or /logs/verifier has {} KiB free: the verifier "
                          "could not write its reward",
                          r.min_avail_kib);
  }
  return r;
}

namespace {

#ifdef FORGE_VERIFY_HAVE_DOCKER_ENGINE
using sandbox::docker::Engine;

Result<std::vector<FileChange>> DockerChanges(Engine& engine, const std::string& id) {
  auto listed = engine.CallJson("GET", "/containers/" + Engine::Escape(id) + "/changes");
  if (!listed.ok()) return listed.status().Prefixed("list changes of " + id);
  std::vector<FileChange> changes;
  if (!listed->is_array()) return changes;  // null: nothing changed
  for (const auto& c : *listed) {
    if (!c.is_object()) continue;
    changes.push_back({c.value("Path", std::string()), c.value("Kind", 0)});
  }
  return changes;
}

// Whether `path` exists in the container; HEAD on the archive endpoint asks
// the engine, which looks from outside without running anything inside.
bool DockerPathExists(Engine& engine, const std::string& id, const std::string& path) {
  auto head = engine.Call("HEAD", "/containers/" + Engine::Escape(id) + "/archive?path=" + Engine::Escape(path), "",
                          {"", 30});
  return head.ok() && head->status == 200;
}

Status DockerTamperCheck(Engine& engine, const std::string& id, const Toolchain& toolchain, Preparation* prep) {
  auto changes = DockerChanges(engine, id);
  if (!changes.ok()) return changes.status();
  std::set<std::string> changed;
  for (const auto& c : *changes) changed.insert(c.path);
  ShadowCheck elsewhere = [&](const std::string& name, const std::string& dir) {
    for (auto other : kBinDirs) {
      const std::string path = std::string(other) + "/" + name;
      if (other == dir || changed.count(path)) continue;
      if (DockerPathExists(engine, id, path)) return true;
    }
    return false;
  };
  Json found = ToolchainChanges(*changes, toolchain, elsewhere);
  prep->tampered = !found.empty();
  prep->tamper = {{"checked", true}, {"method", "docker changes"}, {"changes", changes->size()}};
  if (found.size() > 50) found.erase(found.begin() + 50, found.end());
  prep->tamper["toolchain"] = std::move(found);
  return Status::Ok();
}
#endif

Status TamperCheck(sandbox::Sandbox& sandbox, const PrepareOptions& options, Preparation* prep) {
  if (options.previous_tamper != nullptr && options.previous_tamper->is_object() &&
      options.previous_tamper->value("checked", false)) {
    prep->tamper = *options.previous_tamper;
    prep->tamper["from_earlier_verification"] = true;
    prep->tampered = prep->tamper.contains("toolchain") && prep->tamper["toolchain"].is_array() &&
                     !prep->tamper["toolchain"].empty();
    return Status::Ok();
  }
#ifdef FORGE_VERIFY_HAVE_DOCKER_ENGINE
  if (Engine* engine = sandbox::docker::EngineOf(sandbox)) {
    return DockerTamperCheck(*engine, sandbox.handle().id, ToolchainOfScript(options.script), prep);
  }
#endif
  prep->tamper = {{"checked", false},
                  {"method", "none"},
                  {"why", "the " + sandbox.handle().backend + " backend lists no file changes"}};
  return Status::Ok();
}

// Runs one sweep pass as user; a fault the agent's state causes lands in
// prep. *left: processes the pass could not stop.
Status RunSweep(sandbox::Sandbox& sandbox, bool stop, bool clear, const std::string& user, Preparation* prep,
                int* left = nullptr) {
  const std::string tag = RandomTag();
  sandbox::ExecRequest req;
  req.argv = {"/bin/sh", "-c", SweepScript(stop, clear, tag)};
  req.user = user;
  req.workdir = "/";
  req.timeout_seconds = 60;
  auto ran = sandbox.Exec(req);
  if (!ran.ok()) {
    std::string cause = AgentCause(sandbox, ran.status());
    if (cause.empty()) return ran.status().Prefixed("sweep before the verifier");
    prep->fault = "forge's sweep before the verifier failed: " + ran.status().message() + " (" + cause + ")";
    return Status::Ok();
  }
  SweepReport report = ParseSweepOutput(ran->stdout_data, ran->timed_out ? -1 : ran->exit_code);
  if (ran->timed_out) report.fault = "forge's sweep ran past its 60 s deadline";
  if (left != nullptr) *left = report.left;
  if (report.stopped >= 0 && !prep->sweep.contains("stopped")) prep->sweep["stopped"] = report.stopped;
  if (report.min_avail_kib >= 0) prep->sweep["free_kib"] = report.min_avail_kib;
  if (!report.fault.empty()) {
    prep->fault = report.fault;
    std::string err = ran->stderr_data.substr(0, 300);
    if (!err.empty() && report.fault.find("did not run") != std::string::npos) prep->fault += ": " + err;
  }
  return Status::Ok();
}

}  // namespace

Result<Preparation> PrepareSandbox(sandbox::Sandbox& sandbox, const PrepareOptions& options) {
  Preparation prep;
  // Processes first: nothing the agent left can change the sandbox after
  // the evidence is taken.
  if (!options.stop_processes) {
    prep.sweep["kept_processes"] = true;
  } else if (sandbox.handle().Is(sandbox::BackendKind::kLocal)) {
    // Its commands are the host's processes: kill -1 would reach the user's
    // own. Under bubblewrap the harness's processes end with it anyway.
    prep.sweep["stop"] = "not on the local backend: its processes are the host's";
  } else {
    // Root without capabilities (forge's sandboxes drop them all) may not
    // signal another user's processes: what is left gets a pass as the
    // sandbox's own user, the agent's.
    int left = 0;
    FORGE_RETURN_IF_ERROR(RunSweep(sandbox, true, false, "0", &prep, &left));
    if (left > 0) {
      prep.fault.clear();
      FORGE_RETURN_IF_ERROR(RunSweep(sandbox, true, false, "", &prep));
    }
  }
  FORGE_RETURN_IF_ERROR(TamperCheck(sandbox, options, &prep));
  if (prep.fault.empty() && options.clear_harbor_dirs) {
    FORGE_RETURN_IF_ERROR(RunSweep(sandbox, false, true, "0", &prep));
    // A local sandbox's /tests is the host's: failing to clear it is forge's
    // setup, not the agent's doing.
    if (!prep.fault.empty() && sandbox.handle().Is(sandbox::BackendKind::kLocal)) {
      return Status::BadConfig("local sandbox: " + prep.fault);
    }
  }
  return prep;
}

#ifdef FORGE_VERIFY_HAVE_DOCKER_ENGINE
namespace {

// A docker sandbox that is not running: the agent's doing when its PID 1
// ended before its deadline; empty when it is the infrastructure's.
std::string DockerCauseOfLostSandbox(Engine& engine, const sandbox::Handle& handle) {
  auto inspect = engine.CallJson("GET", "/containers/" + Engine::Escape(handle.id) + "/json");
  if (!inspect.ok() || inspect->value("/State/Running"_json_pointer, false)) return "";
  if (inspect->value("/Config/Labels/forge.managed"_json_pointer, std::string()) != "1") return "";
  // The keep-alive ends by itself only at its deadline: before it, PID 1 was
  // stopped from inside (the agent) or ran out of the agent's memory.
  const std::string deadline = inspect->value("/Config/Labels/forge.deadline"_json_pointer, std::string());
  if (!deadline.empty() && std::time(nullptr) >= std::atoll(deadline.c_str())) return "";
  return fmt::format("the sandbox's PID 1 ended (status {}{}, at {}) before its deadline: the agent stopped "
                     "its keep-alive",
                     inspect->value("/State/ExitCode"_json_pointer, -1),
                     inspect->value("/State/OOMKilled"_json_pointer, false) ? ", out of memory" : "",
                     inspect->value("/State/FinishedAt"_json_pointer, std::string("?")));
}

}  // namespace
#endif

std::string AgentCause(sandbox::Sandbox& sandbox, const Status& status) {
#ifdef FORGE_VERIFY_HAVE_DOCKER_ENGINE
  if (Engine* engine = sandbox::docker::EngineOf(sandbox)) {
    auto inspect = engine->CallJson("GET", "/containers/" + Engine::Escape(sandbox.handle().id) + "/json");
    if (!inspect.ok()) return "";  // engine unreachable or the sandbox gone
    if (inspect->value("/State/Running"_json_pointer, false)) {
      return "the sandbox is running and the engine answers, so the step failed on the state the agent left";
    }
    return DockerCauseOfLostSandbox(*engine, sandbox.handle());
  }
#endif
  // Other backends: a transport failure or a sandbox that is gone is the
  // infrastructure's; any other failure comes from inside the sandbox.
  switch (status.kind()) {
    case Kind::kUnavailable:
    case Kind::kBusy:
    case Kind::kNotFound:
    case Kind::kProtocol:
      return "";
    default:
      return "the " + sandbox.handle().backend + " sandbox answered, so the step failed on the state the agent left";
  }
}

std::string AgentCauseOfLostSandbox(sandbox::Backend& backend, const sandbox::Handle& handle, const Status& status) {
  (void)status;
#ifdef FORGE_VERIFY_HAVE_DOCKER_ENGINE
  if (Engine* engine = sandbox::docker::EngineOf(backend)) return DockerCauseOfLostSandbox(*engine, handle);
#else
  (void)backend;
  (void)handle;
#endif
  return "";
}

}  // namespace forge::verify
