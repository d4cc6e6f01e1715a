// forge-box sleep: the watchdog's timer in a held sandbox. The image's
// `sleep` is the agent's to replace, and the watchdog starts it while the
// agent runs; this one is forge's. SIGTERM ends it (the default action), so
// the watchdog's shell can cut it short when the command has ended.
#include <errno.h>
#include <time.h>

#include <cstdlib>
#include <string>

#include "commands.h"
#include "proc.h"
#include "sandbox/box_protocol.h"

namespace forge::box {

int Sleep(int argc, char** argv) {
  char* end = nullptr;
  const long long seconds = argc == 1 ? std::strtoll(argv[0], &end, 10) : -1;
  if (argc != 1 || end == argv[0] || *end != '\0' || seconds < 0) {
    WriteAll(2, std::string(sandbox::kBoxTag) + "usage: forge-box sleep SECONDS\n");
    return 64;
  }
  timespec left = {static_cast<time_t>(seconds), 0};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  return 0;
}

}  // namespace forge::box
