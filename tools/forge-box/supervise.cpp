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

#include "commands.h"
#include "proc.h"
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

double Now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

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
  const double until = Now() + o.wait_seconds;
  while (!g_terminate && Now() < until) {
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

struct Outcome {
  int exit = sandbox::kSuperviseNoInput;
  bool timed_out = false;
  bool truncated = false;
  std::string out, err;
};

void Keep(std::string& kept, const char* data, size_t n, size_t max, bool* truncated) {
  const size_t room = kept.size() < max ? max - kept.size() : 0;
  if (n > room) *truncated = true;
  kept.append(data, n < room ? n : room);
}

// CMD in a session of its own (so a timeout kills all of it), its streams
// read until it has ended and they are drained (at most 1 s more: a
// background process may hold them open).
void RunCommand(const Options& o, Outcome* r) {
  if (o.argv.empty()) {
    r->err = std::string(sandbox::kBoxTag) + "no command: none after -- and no " + o.dir + "/" +
             sandbox::kSuperviseArgv + "\n";
    return;
  }
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r->err = std::string(sandbox::kBoxTag) + "pipe: " + std::strerror(errno) + "\n";
    return;
  }
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    const int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (!o.workdir.empty() && chdir(o.workdir.c_str()) != 0) {
      WriteAll(2, std::string(sandbox::kBoxTag) + "cannot enter " + o.workdir + ": " + std::strerror(errno) + "\n");
      _exit(126);
    }
    std::vector<char*> args;
    for (const std::string& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    WriteAll(2, std::string(sandbox::kBoxTag) + "cannot run " + o.argv[0] + ": " + std::strerror(errno) + "\n");
    _exit(sandbox::kBoxExecFailed);
  }
  close(out[1]);
  close(err[1]);
  std::vector<pollfd> fds = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  const double deadline = o.timeout_seconds > 0 ? Now() + o.timeout_seconds : 0;
  double ended_at = 0;
  int status = 0;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (ended_at > 0 && Now() > ended_at + 1) break;
    if (ended_at == 0 && (g_terminate || (deadline > 0 && Now() > deadline))) {
      r->timed_out = !g_terminate;
      kill(-child, SIGKILL);
      kill(child, SIGKILL);
    }
    if (poll(fds.data(), fds.size(), 100) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        char buf[65536];
        const ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          Keep(i == 0 ? r->out : r->err, buf, static_cast<size_t>(n), o.max_output, &r->truncated);
        } else if (n == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
        }
      }
    }
    // PID 1 reaps every orphan; CMD's own end is the one that counts.
    for (pid_t p; (p = waitpid(-1, ended_at > 0 ? nullptr : &status, WNOHANG)) > 0;) {
      if (p == child) ended_at = Now();
    }
  }
  for (const pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  while (ended_at == 0) {  // streams closed first: wait for CMD itself
    const pid_t p = waitpid(-1, &status, 0);
    if (p == child || (p < 0 && errno != EINTR)) break;
  }
  r->exit = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

void Report(const Options& o, const Outcome& r) {
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
  Outcome r;
  if (!WaitForInput(o)) {
    r.err = std::string(sandbox::kBoxTag) + "no input in " + o.dir + " within " + std::to_string(o.wait_seconds) + " s\n";
  } else {
    LoadInput(o);
    RunCommand(o, &r);
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
