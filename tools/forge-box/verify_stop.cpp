// forge-box verify-stop [--wait S]: ends every forge-box verify of this
// sandbox (verify_stop.h), for forge-verify's one best-effort exec after its
// own verification stream was stopped (SIGINT) or ran past its deadline: the
// exec's WebSocket going away does not end the process it started. Prints
// "forge-box: verify-stop: stopped N" (exit 0), or "... left N" (exit 3).
#include "verify_stop.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/clock.h"
#include "commands.h"
#include "proc.h"
#include "sandbox/box_protocol.h"

namespace forge::box {
namespace {

// Whether /proc/PID/cmdline is "[DIR/]forge-box verify ...".
bool IsVerify(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/cmdline";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const std::string program(buf);
  const size_t at = program.size() + 1;
  if (at >= static_cast<size_t>(n)) return false;
  const size_t slash = program.rfind('/');
  const std::string name = slash == std::string::npos ? program : program.substr(slash + 1);
  return name == "forge-box" && std::strcmp(buf + at, "verify") == 0;
}

int Alive(const std::vector<Process>& before) {
  int alive = 0;
  for (const Process& now : ListProcesses()) {
    for (const Process& p : before) alive += now.pid == p.pid && now.start == p.start && !now.dead;
  }
  return alive;
}

void WaitGone(const std::vector<Process>& procs, double seconds) {
  const double until = MonotonicSeconds() + seconds;
  while (Alive(procs) > 0 && MonotonicSeconds() < until) {
    timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace

int StopVerifies(double wait_seconds, int* left) {
  std::vector<Process> found;
  for (const Process& p : ListProcesses()) {
    if (p.pid != 1 && !p.dead && IsVerify(p.pid)) found.push_back(p);
  }
  for (const Process& p : found) kill(p.pid, SIGTERM);
  WaitGone(found, wait_seconds);
  if (Alive(found) > 0) {
    for (const Process& p : found) kill(p.pid, SIGKILL);
    WaitGone(found, 2);
  }
  *left = Alive(found);
  return static_cast<int>(found.size());
}

int VerifyStop(int argc, char** argv) {
  double wait = 5;
  bool ok = argc == 0;
  if (argc == 2 && std::strcmp(argv[0], "--wait") == 0) {
    char* end = nullptr;
    wait = std::strtod(argv[1], &end);
    ok = end != argv[1] && *end == '\0' && wait >= 0;
  }
  if (!ok) {
    WriteAll(2, std::string(sandbox::kBoxTag) + "usage: forge-box verify-stop [--wait S]\n");
    return 64;
  }
  int left = 0;
  const int found = StopVerifies(wait, &left);
  const std::string tag = std::string(sandbox::kBoxTag) + "verify-stop: ";
  if (left > 0) {
    WriteAll(1, tag + "left " + std::to_string(left) + " of " + std::to_string(found) + "\n");
    return 3;
  }
  WriteAll(1, tag + "stopped " + std::to_string(found) + "\n");
  return 0;
}

}  // namespace forge::box
