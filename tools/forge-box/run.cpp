#include "run.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/clock.h"
#include "proc.h"
#include "sandbox/box_protocol.h"
#include "verify/tracer.h"

namespace forge::box {
namespace {

void Keep(std::string& kept, const char* data, size_t n, size_t max, bool* truncated) {
  const size_t room = kept.size() < max ? max - kept.size() : 0;
  if (n > room) *truncated = true;
  kept.append(data, n < room ? n : room);
}

// The tracer's two pipes: its go to the child, the child's why back.
struct TracePipes {
  int go[2] = {-1, -1};
  int why[2] = {-1, -1};
};

[[noreturn]] void Child(const RunSpec& spec, int out, int err, const TracePipes* trace = nullptr) {
  setsid();
  const int null = open("/dev/null", O_RDONLY);
  dup2(null, 0);
  dup2(out, 1);
  dup2(err, 2);
  if (!spec.workdir.empty() && chdir(spec.workdir.c_str()) != 0) {
    WriteAll(2, std::string(sandbox::kBoxTag) + "cannot enter " + spec.workdir + ": " + std::strerror(errno) + "\n");
    _exit(126);
  }
  if (trace != nullptr) {
    close(trace->go[1]);
    close(trace->why[0]);
    verify::Tracer::InChild(trace->go[0], trace->why[1]);
  }
  std::vector<char*> args;
  for (const std::string& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (spec.path_lookup) execvp(args[0], args.data());
  else execv(args[0], args.data());
  WriteAll(2, std::string(sandbox::kBoxTag) + "cannot run " + spec.argv[0] + ": " + std::strerror(errno) + "\n");
  _exit(sandbox::kBoxExecFailed);
}

}  // namespace

namespace {

// Reads what poll found ready on fds (the command's stdout, then its
// stderr) into r; a stream that ends (or fails) is closed and its fd set to -1.
void ReadReady(std::vector<pollfd>& fds, const RunSpec& spec, RunOutcome* r) {
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].fd < 0 || fds[i].revents == 0) continue;
    char buf[65536];
    const ssize_t n = read(fds[i].fd, buf, sizeof buf);
    if (n > 0) {
      Keep(i == 0 ? r->out : r->err, buf, static_cast<size_t>(n), spec.max_output, &r->truncated);
    } else if (n == 0 || errno != EINTR) {
      close(fds[i].fd);
      fds[i].fd = -1;
    }
  }
}

void CloseOpen(const std::vector<pollfd>& fds) {
  for (const pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
}

// Reads both streams until they close or *stop is set (then at most 1 s more).
void ReadStreams(int out, int err, const RunSpec& spec, const std::atomic<bool>* stop, RunOutcome* r) {
  std::vector<pollfd> fds = {{out, POLLIN, 0}, {err, POLLIN, 0}};
  double stop_seen = 0;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (stop->load() && stop_seen == 0) stop_seen = MonotonicSeconds();
    if (stop_seen > 0 && MonotonicSeconds() > stop_seen + 1) break;
    if (poll(fds.data(), fds.size(), 100) > 0) ReadReady(fds, spec, r);
  }
  CloseOpen(fds);
}

// RunCommand under spec.tracer: the tracer's loop on this thread (ptrace
// answers only the thread that attached), the streams on another.
void RunTraced(const RunSpec& spec, int out[2], int err[2], RunOutcome* r) {
  TracePipes pipes;
  if (pipe2(pipes.go, O_CLOEXEC) != 0 || pipe2(pipes.why, O_CLOEXEC) != 0) {
    r->err = std::string(sandbox::kBoxTag) + "pipe: " + std::strerror(errno) + "\n";
    return;
  }
  // A process that is not dumpable may be traced only with CAP_SYS_PTRACE:
  // the child is made dumpable (as its execve would make it anyway) for the
  // attach, forge-box itself only around the fork.
  const int dumpable = prctl(PR_GET_DUMPABLE);
  prctl(PR_SET_DUMPABLE, 1);
  const pid_t child = fork();
  if (child == 0) Child(spec, out[1], err[1], &pipes);
  prctl(PR_SET_DUMPABLE, dumpable);
  close(out[1]);
  close(err[1]);
  close(pipes.go[0]);
  close(pipes.why[1]);
  spec.tracer->Attach(child, pipes.go[1]);
  std::atomic<bool> stop{false};
  std::thread reader(ReadStreams, out[0], err[0], std::cref(spec), &stop, r);
  const double deadline = spec.timeout_seconds > 0 ? MonotonicSeconds() + spec.timeout_seconds : 0;
  const int status = spec.tracer->Run(deadline, 1.0, spec.terminate, &r->timed_out);
  stop.store(true);
  reader.join();
  std::string why;
  char buf[512];
  fcntl(pipes.why[0], F_SETFL, O_NONBLOCK);
  for (ssize_t n; (n = read(pipes.why[0], buf, sizeof buf)) > 0;) why.append(buf, static_cast<size_t>(n));
  close(pipes.why[0]);
  spec.tracer->ChildFailed(why);
  r->exit = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

}  // namespace

void RunCommand(const RunSpec& spec, bool reap_all, RunOutcome* r) {
  int out[2], err[2];
  if (spec.argv.empty() || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r->err = std::string(sandbox::kBoxTag) + (spec.argv.empty() ? "no command" : "pipe: " + std::string(std::strerror(errno))) + "\n";
    return;
  }
  if (spec.tracer != nullptr) return RunTraced(spec, out, err, r);
  const pid_t child = fork();
  if (child == 0) Child(spec, out[1], err[1]);
  close(out[1]);
  close(err[1]);
  std::vector<pollfd> fds = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  const double deadline = spec.timeout_seconds > 0 ? MonotonicSeconds() + spec.timeout_seconds : 0;
  const auto terminated = [&] { return spec.terminate != nullptr && *spec.terminate; };
  double ended_at = 0;
  int status = 0;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (ended_at > 0 && MonotonicSeconds() > ended_at + 1) break;
    if (ended_at == 0 && (terminated() || (deadline > 0 && MonotonicSeconds() > deadline))) {
      r->timed_out = !terminated();
      kill(-child, SIGKILL);
      kill(child, SIGKILL);
    }
    if (poll(fds.data(), fds.size(), 100) > 0) ReadReady(fds, spec, r);
    // The command's own end is the one that counts.
    for (pid_t p; (p = waitpid(reap_all ? -1 : child, ended_at > 0 ? nullptr : &status, WNOHANG)) > 0;) {
      if (p == child) ended_at = MonotonicSeconds();
      if (!reap_all) break;
    }
  }
  CloseOpen(fds);
  while (ended_at == 0) {  // streams closed first: wait for the command itself
    const pid_t p = waitpid(reap_all ? -1 : child, &status, 0);
    if (p == child || (p < 0 && errno != EINTR)) break;
  }
  r->exit = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

}  // namespace forge::box
