// forge-box supervise: PID 1 of a pod-native rollout on Kubernetes. The
// harness is the pod's own process, as on docker's one-shot run: no exec
// stays open while it runs. The supervisor waits for the rollout's files
// (forge-launch's one setup exec ends with kSuperviseGo), runs CMD with the
// environment in kSuperviseEnv, keeps at most --max-output bytes of each
// stream, kills CMD's session at --timeout, and says how it ended on the
// termination message and its stdout (box_protocol.h). Then it exits with
// CMD's status (the watch sees containerStatuses[].state.terminated), or,
// with --hold, stays as the pod's keep-alive for the verifier.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/clock.h"
#include "commands.h"
#include "proc.h"
#include "run.h"
#include "sandbox/box_protocol.h"

namespace forge::box {
namespace {

volatile sig_atomic_t g_terminate = 0;
// Only from outside the pod (the kubelet: the sender has no pid here); the
// agent's own signals to PID 1 are ignored, as keepalive's are.
void OnTerminate(int, siginfo_t* info, void*) {
  if (info == nullptr || info->si_pid == 0) g_terminate = 1;
}

struct Options {
  std::string dir = sandbox::kSuperviseDir;
  std::string status_file = "/dev/termination-log";
  std::string workdir;
  double wait_seconds = 300;
  double timeout_seconds = 0;  // 0: none
  size_t max_output = 1 << 20;
  long long hold_seconds = 0;  // 0: exit with CMD
  std::vector<std::string> argv;  // after "--", else kSuperviseArgv's
};

bool ParseNumber(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0' && *out >= 0;
}

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 0; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--") {
      o->argv.assign(argv + i + 1, argv + argc);
      return !o->argv.empty();
    }
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    double number = 0;
    if (flag == "--dir") {
      o->dir = value;
    } else if (flag == "--status-file") {
      o->status_file = value;
    } else if (flag == "--workdir") {
      o->workdir = value;
    } else if (flag == "--wait" && ParseNumber(value, &number)) {
      o->wait_seconds = number;
    } else if (flag == "--timeout" && ParseNumber(value, &number)) {
      o->timeout_seconds = number;
    } else if (flag == "--max-output" && ParseNumber(value, &number)) {
      o->max_output = static_cast<size_t>(number);
    } else if (flag == "--hold" && ParseNumber(value, &number)) {
      o->hold_seconds = static_cast<long long>(number);
    } else {
      return false;
    }
  }
  return true;
}

// Waits for the setup exec's last file; false at the wait's end or a SIGTERM.
bool WaitForInput(const Options& o) {
  const std::string go = o.dir + "/" + sandbox::kSuperviseGo;
  const double until = MonotonicSeconds() + o.wait_seconds;
  while (!g_terminate && MonotonicSeconds() < until) {
    if (access(go.c_str(), F_OK) == 0) return true;
    usleep(50 * 1000);
  }
  return false;
}

// A file of entries each ended by a NUL (none when it is missing).
std::vector<std::string> LoadList(const std::string& path) {
  std::vector<std::string> entries;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return entries;
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    entries.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return entries;
}

// The rollout's environment (NAME=VALUE) and, unless given, its command:
// both come with the setup, never in the pod's spec.
void LoadInput(Options& o) {
  for (const std::string& entry : LoadList(o.dir + "/" + sandbox::kSuperviseEnv)) {
    const size_t eq = entry.find('=');
    if (eq != std::string::npos && eq > 0) setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
  }
  if (o.argv.empty()) o.argv = LoadList(o.dir + "/" + sandbox::kSuperviseArgv);
}

void Report(const Options& o, const RunOutcome& r) {
  const std::string line = std::string(sandbox::kSuperviseTag) + "exit=" + std::to_string(r.exit) +
                           " timed_out=" + (r.timed_out ? "1" : "0") + " truncated=" + (r.truncated ? "1" : "0") +
                           " stdout=" + std::to_string(r.out.size()) + " stderr=" + std::to_string(r.err.size()) + "\n";
  // The kubelet keeps 4096 bytes of a termination message: the output goes
  // there too when it fits, so forge-launch need not read the log.
  const bool whole = line.size() + r.out.size() + r.err.size() <= sandbox::kTerminationMessageBytes;
  const int fd = open(o.status_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    WriteAll(fd, whole ? line + r.out + r.err : line);
    close(fd);
  }
  WriteAll(1, line);
  WriteAll(1, r.out);
  WriteAll(1, r.err);
}

}  // namespace

int Supervise(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    WriteAll(2, std::string(sandbox::kBoxTag) +
                    "usage: forge-box supervise [--dir DIR] [--status-file FILE] [--workdir DIR] [--wait S] "
                    "[--timeout S] [--max-output BYTES] [--hold S] [-- CMD [ARGS...]]\n");
    return 64;
  }
  // Nothing in the pod may read or write this process's streams by /proc.
  prctl(PR_SET_DUMPABLE, 0);
  struct sigaction term{};
  term.sa_sigaction = OnTerminate;
  term.sa_flags = SA_SIGINFO;
  sigaction(SIGTERM, &term, nullptr);
  sigaction(SIGINT, &term, nullptr);
  RunOutcome r;
  r.exit = sandbox::kSuperviseNoInput;
  if (!WaitForInput(o)) {
    r.err = std::string(sandbox::kBoxTag) + "no input in " + o.dir + " within " + std::to_string(o.wait_seconds) + " s\n";
  } else if (LoadInput(o); o.argv.empty()) {
    r.err = std::string(sandbox::kBoxTag) + "no command: none after -- and no " + o.dir + "/" +
            sandbox::kSuperviseArgv + "\n";
  } else {
    RunCommand({o.argv, o.workdir, o.timeout_seconds, o.max_output, true, &g_terminate}, true, &r);
  }
  // Stopped from outside (the pod deleted, evicted, past its deadline): the
  // command did not end by itself, so there is no status line to trust.
  if (g_terminate) return 128 + SIGTERM;
  Report(o, r);
  if (o.hold_seconds <= 0) return r.exit;
  prctl(PR_SET_NAME, sandbox::kSuperviseDoneName);
  std::string seconds = std::to_string(o.hold_seconds);
  char* keep[] = {seconds.data(), nullptr};
  return KeepAlive(1, keep);
}

// A held pod's readiness probe: the supervisor (PID 1) has ended CMD.
int Done(int argc, char**) {
  if (argc != 0) return 64;
  const int fd = open("/proc/1/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  char name[32] = {};
  const ssize_t n = read(fd, name, sizeof name - 1);
  close(fd);
  return n > 0 && std::strncmp(name, sandbox::kSuperviseDoneName, std::strlen(sandbox::kSuperviseDoneName)) == 0 ? 0
                                                                                                                : 1;
}

// An init container's step: copy this binary to DEST (mode 0555).
int Install(int argc, char** argv) {
  if (argc != 1) {
    WriteAll(2, std::string(sandbox::kBoxTag) + "usage: forge-box install DEST\n");
    return 64;
  }
  const int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  const std::string tmp = std::string(argv[0]) + ".part";
  const int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0555);
  if (in < 0 || out < 0) {
    WriteAll(2, std::string(sandbox::kBoxTag) + "install " + argv[0] + ": " + std::strerror(errno) + "\n");
    return 1;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0) {
    if (write(out, buf, static_cast<size_t>(n)) != n) n = -1;
    if (n < 0) break;
  }
  close(in);
  if (close(out) != 0 || n < 0 || chmod(tmp.c_str(), 0555) != 0 || rename(tmp.c_str(), argv[0]) != 0) {
    WriteAll(2, std::string(sandbox::kBoxTag) + "install " + argv[0] + ": " + std::strerror(errno) + "\n");
    return 1;
  }
  return 0;
}

}  // namespace forge::box
