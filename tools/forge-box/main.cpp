// forge-box: forge's static helper inside a sandbox (sandbox/box_protocol.h).
// Linked statically against libc, with no CLI library, so forge-launch can
// bind-mount it read-only into any image (busybox, a debootstrap rootfs)
// and forge's own steps there run nothing the agent could have replaced.
#include <cstring>
#include <string>

#include "commands.h"
#include "proc.h"

namespace {

constexpr const char* kUsage =
    "usage: forge-box mark -- CMD [ARGS...]\n"
    "       forge-box keepalive SECONDS\n"
    "       forge-box sleep SECONDS\n"
    "       forge-box sweep --tag TAG [--stop] [--keep PID:START,...] [--clear]\n"
    "forge's helper inside a sandbox (bind-mounted read-only at /forge/bin/forge-box).\n"
    "mark       print the moment and the processes alive (one forge-mark: line on stderr), then exec CMD\n"
    "keepalive  be PID 1: reap orphans, exit after SECONDS or on SIGTERM\n"
    "sleep      wait SECONDS (a SIGTERM ends it): the image's sleep may be the agent's\n"
    "sweep      stop the processes not kept, move /tests and /logs/verifier aside and make them afresh\n";

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "mark") return forge::box::Mark(argc - 2, argv + 2);
  if (command == "keepalive") return forge::box::KeepAlive(argc - 2, argv + 2);
  if (command == "sleep") return forge::box::Sleep(argc - 2, argv + 2);
  if (command == "sweep") return forge::box::Sweep(argc - 2, argv + 2);
  if (command == "-h" || command == "--help") {
    forge::box::WriteAll(1, kUsage);
    return 0;
  }
  forge::box::WriteAll(2, kUsage);
  return 64;
}
