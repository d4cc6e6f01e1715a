// forge-box keepalive: PID 1 of a held sandbox. It runs nothing: it waits,
// reaps the orphans every PID 1 inherits, and exits at the sandbox's
// deadline, so a sandbox whose launcher died still ends, or on a SIGTERM
// from outside the sandbox (docker stop); one from inside is ignored.
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "commands.h"
#include "proc.h"
#include "sandbox/box_protocol.h"

namespace forge::box {

int KeepAlive(int argc, char** argv) {
  char* end = nullptr;
  const long long seconds = argc == 1 ? std::strtoll(argv[0], &end, 10) : -1;
  if (argc != 1 || end == argv[0] || *end != '\0' || seconds <= 0) {
    WriteAll(2, std::string(sandbox::kBoxTag) + "usage: forge-box keepalive SECONDS\n");
    return 64;
  }
  sigset_t wanted;
  sigemptyset(&wanted);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&wanted, s);
  sigprocmask(SIG_BLOCK, &wanted, nullptr);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const time_t deadline = now.tv_sec + static_cast<time_t>(seconds);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec >= deadline) return 0;
    timespec wait = {deadline - now.tv_sec, 0};
    siginfo_t info{};
    const int sig = sigtimedwait(&wanted, &info, &wait);
    // From outside the sandbox (docker stop): the sender has no pid here.
    // From inside, it is the agent's: a held sandbox stays for its verifier.
    if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && info.si_pid == 0) return 0;
    // SIGCHLD, a timeout or an interruption: reap whatever has ended.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
}

}  // namespace forge::box
