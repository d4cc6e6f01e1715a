// forge-box mark: the moment the harness starts, said before it starts.
// Everything that exists then belongs to the task's environment (its
// entrypoint's services and files); what appears later is the agent's.
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/clock.h"
#include "commands.h"
#include "proc.h"
#include "sandbox/box_protocol.h"

namespace forge::box {

int Mark(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[0], "--") != 0) {
    WriteAll(2, std::string(sandbox::kBoxTag) + "usage: forge-box mark -- CMD [ARGS...]\n");
    return 64;
  }
  // The process list first, the clock after: a process started in between
  // is newer than t0 and counts as the harness's. CLOCK_REALTIME_COARSE is
  // the clock file times come from, so a file written after this moment
  // never has a change time below t0.
  const std::string procs = FormatProcesses(ListProcesses());
  const int64_t t0 = ClockNs(CLOCK_REALTIME_COARSE);
  const int64_t boot = ClockNs(CLOCK_BOOTTIME);
  WriteAll(2, std::string(sandbox::kMarkTag) + "t0=" + std::to_string(t0) + " boot=" + std::to_string(boot) +
                  " procs=" + procs + "\n");
  execvp(argv[1], argv + 1);
  WriteAll(2, std::string(sandbox::kBoxTag) + "cannot run " + argv[1] + ": " + std::strerror(errno) + "\n");
  return sandbox::kBoxExecFailed;
}

}  // namespace forge::box
