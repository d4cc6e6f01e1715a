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
    "       forge-box supervise [--wait S] [--timeout S] [--max-output BYTES] [--hold S] [--workdir DIR] [-- CMD...]\n"
    "       forge-box done\n"
    "       forge-box install DEST\n"
    "       forge-box verify --tag TAG [--stop] [--keep PID:START,...] [--clear] [--timeout S] [--max-output BYTES]\n"
    "                        [--shebang] [--reward BYTES] [--t0 NS] [--no-trace] [--heartbeat S] < ARCHIVE\n"
    "       forge-box verify-stop [--wait S]\n"
    "forge's helper inside a sandbox (bind-mounted read-only at /forge/bin/forge-box).\n"
    "mark       print the moment and the processes alive (one forge-mark: line on stderr), then exec CMD\n"
    "keepalive  be PID 1: reap orphans, exit after SECONDS or on SIGTERM\n"
    "sleep      wait SECONDS (a SIGTERM ends it): the image's sleep may be the agent's\n"
    "sweep      stop the processes not kept, move /tests and /logs/verifier aside and make them afresh\n"
    "supervise  be PID 1 of a pod-native rollout: wait for /forge/run/go, run CMD, report how it ended\n"
    "done       exit 0 once a held pod's supervisor has ended CMD (its readiness probe)\n"
    "install    copy forge-box to DEST (a pod's init container)\n"
    "verify     a whole verification in one stream: read the archive (command, environment, tests), sweep,\n"
    "           unpack the tests into /tests, run the command (never from PATH) under a tracer of its process\n"
    "           tree (--no-trace: none), report its end, output, rewards and what the tracer found; a\n"
    "           verification still running is ended first; --heartbeat S: once the archive is read, the end of\n"
    "           stdin, or S seconds without a byte on it (0: only its end), ends the verifier's tree (its client\n"
    "           is gone); SIGTERM ends it too\n"
    "verify-stop  end every forge-box verify running here (SIGTERM, SIGKILL after --wait S, default 5)\n";

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "mark") return forge::box::Mark(argc - 2, argv + 2);
  if (command == "keepalive") return forge::box::KeepAlive(argc - 2, argv + 2);
  if (command == "sleep") return forge::box::Sleep(argc - 2, argv + 2);
  if (command == "sweep") return forge::box::Sweep(argc - 2, argv + 2);
  if (command == "supervise") return forge::box::Supervise(argc - 2, argv + 2);
  if (command == "done") return forge::box::Done(argc - 2, argv + 2);
  if (command == "install") return forge::box::Install(argc - 2, argv + 2);
  if (command == "verify") return forge::box::Verify(argc - 2, argv + 2);
  if (command == "verify-stop") return forge::box::VerifyStop(argc - 2, argv + 2);
  if (command == "-h" || command == "--help") {
    forge::box::WriteAll(1, kUsage);
    return 0;
  }
  forge::box::WriteAll(2, kUsage);
  return 64;
}
