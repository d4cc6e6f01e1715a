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

std::string RandomTag() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

}  // namespace

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

std::vector<std::string> SweepArgv(bool stop_processes, bool clear_harbor_dirs, const std::string& tag,
                                   const std::optional<sandbox::Baseline>& baseline) {
  std::vector<std::string> argv = {sandbox::kBoxSandboxPath, "sweep", "--tag", tag};
  if (stop_processes) {
    argv.push_back("--stop");
    if (baseline) argv.insert(argv.end(), {"--keep", baseline->KeepList()});
  }
  if (clear_harbor_dirs) argv.push_back("--clear");
  return argv;
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
    r.fault = fmt::format("forge's sweep did not finish (exit status {}{})", exit_code,
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
#endif

// The user a sweep runs as: root, or where the sandbox execs only as its
// own user (a pod), that user, noted in the sweep.
std::string Root(const sandbox::Sandbox& sandbox, Preparation& prep) {
  if (sandbox.ExecsAsAnyUser()) return "0";
  prep.sweep["user"] = "the sandbox's own (the " + sandbox.handle().backend + " backend execs as it)";
  return "";
}

// Runs one sweep pass as user; a fault the agent's state causes lands in
// prep. *left: processes the pass could not stop.
Status RunSweep(sandbox::Sandbox& sandbox, bool stop, bool clear, const std::string& user,
                const PrepareOptions& options, Preparation* prep, int* left = nullptr) {
  const std::string tag = RandomTag();
  sandbox::ExecRequest req;
  req.argv = sandbox.has_box() ? SweepArgv(stop, clear, tag, options.baseline)
                               : std::vector<std::string>{"/bin/sh", "-c", SweepScript(stop, clear, tag)};
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
  NoteSweep(report, prep);
  std::string err = ran->stderr_data.substr(0, 300);
  if (!err.empty() && report.fault.find("did not finish") != std::string::npos) prep->fault += ": " + err;
  return Status::Ok();
}

}  // namespace

void NoteSweep(const SweepReport& report, Preparation* prep) {
  if (report.stopped >= 0 && !prep->sweep.contains("stopped")) prep->sweep["stopped"] = report.stopped;
  if (report.min_avail_kib >= 0) prep->sweep["free_kib"] = report.min_avail_kib;
  if (!report.fault.empty()) prep->fault = report.fault;
}

std::vector<std::string> BoxVerifyArgv(const sandbox::Sandbox& sandbox, const PrepareOptions& options,
                                       Preparation* prep) {
  if (!options.stop_processes) prep->sweep["kept_processes"] = true;
  Root(sandbox, *prep);
  prep->sweep["stream"] = "forge-box verify";
  std::vector<std::string> argv =
      SweepArgv(options.stop_processes, options.clear_harbor_dirs, RandomTag(), options.baseline);
  argv[1] = "verify";
  return argv;
}

Result<Preparation> PrepareSandbox(sandbox::Sandbox& sandbox, const PrepareOptions& options) {
  Preparation prep;
  // Processes first: nothing the agent left can change the sandbox after
  // it is cleared.
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
    FORGE_RETURN_IF_ERROR(RunSweep(sandbox, true, false, Root(sandbox, prep), options, &prep, &left));
    if (left > 0 && sandbox.ExecsAsAnyUser()) {
      prep.fault.clear();
      FORGE_RETURN_IF_ERROR(RunSweep(sandbox, true, false, "", options, &prep));
    }
  }
  if (prep.fault.empty() && options.clear_harbor_dirs) {
    FORGE_RETURN_IF_ERROR(RunSweep(sandbox, false, true, Root(sandbox, prep), options, &prep));
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
  // Other backends: only a failure that comes from inside the sandbox (a
  // command there failed, a file there is too large) is the agent's; a
  // transport failure, a sandbox that is gone, and a request forge's own
  // backend refused (InvalidArgument, BadConfig, Internal ...) are the
  // infrastructure's.
  switch (status.kind()) {
    case Kind::kIoError:
    case Kind::kInvalidData:
      return "the " + sandbox.handle().backend + " sandbox answered, so the step failed on the state the agent left";
    default:
      return "";
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
