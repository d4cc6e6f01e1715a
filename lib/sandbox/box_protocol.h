// What forge-box (tools/forge-box), forge's static helper inside a sandbox,
// says on its standard streams, and where a sandbox finds it. Shared by the
// helper (libc only) and the library that reads its lines, so this header
// needs nothing but the language.
//
// forge-box is bind-mounted read-only into every docker sandbox, so nothing
// the agent does inside can replace it: it is how forge's own steps run
// there without a program from the sandbox's PATH.
//   forge-box mark -- CMD...     one "forge-mark:" line on stderr (the moment
//                                the harness starts and the processes alive
//                                then), then exec CMD
//   forge-box keepalive SECONDS  PID 1 of a held sandbox: reaps orphans,
//                                exits at the deadline or on SIGTERM
//   forge-box sweep [--stop] [--keep PID:START,...] [--clear] --tag TAG
//                                stops the processes that are not kept, moves
//                                /tests and /logs/verifier aside and makes
//                                them afresh, reports the free space
//   forge-box install DEST       copy itself to DEST (an init container's
//                                step: a pod gets forge-box from an image)
//   forge-box supervise [options] [-- CMD...]
//                                PID 1 of a pod-native rollout (k8s): waits
//                                for its input, runs CMD, bounds and keeps its
//                                output, says how it ended, holds the pod
//   forge-box done               exit 0 once the supervisor has ended CMD
//                                (a held pod's readiness probe)
//   forge-box verify [sweep options] [--timeout S] [--max-output B]
//                    [--shebang] [--reward BYTES]
//                                a whole verification in one stream (a held
//                                pod, where each exec is an API request):
//                                reads its input archive from stdin, sweeps,
//                                unpacks the tests, runs the verifier, says
//                                how it ended with its output and reward;
//                                --heartbeat S: its client gone (stdin's end,
//                                S s without a byte) ends the verifier
//   forge-box verify-stop [--wait S]
//                                ends every forge-box verify of the sandbox
#pragma once

namespace forge::sandbox {

// Where a docker sandbox sees forge-box.
inline constexpr const char* kBoxSandboxPath = "/forge/bin/forge-box";

// "forge-mark: t0=<ns> boot=<ns> procs=<pid>:<start>,...": t0 is
// CLOCK_REALTIME_COARSE and boot CLOCK_BOOTTIME, in nanoseconds, read just
// before the harness is exec'd; each process alive then (but the helper
// itself) by its pid and its start time (/proc/PID/stat field 22, clock
// ticks since boot).
inline constexpr const char* kMarkTag = "forge-mark: ";
// Every line of a sweep starts so; see verify/hardening.h for the rest.
inline constexpr const char* kSweepTag = "forge-sweep: ";
// forge-box's own failures (bad arguments, a command it cannot exec).
inline constexpr const char* kBoxTag = "forge-box: ";
// mark could not exec the command.
inline constexpr int kBoxExecFailed = 127;

// supervise: where a pod's init container puts forge-box (an emptyDir,
// mounted read-only in the main container) and the supervisor's own
// directory (an emptyDir): forge-launch's one setup exec unpacks the
// rollout's files there and last the file kSuperviseGo, which starts CMD.
// kSuperviseEnv holds CMD's environment (NAME=VALUE, NUL-terminated): it may
// hold the rollout's secret, so it is never in the pod's spec.
inline constexpr const char* kBoxDir = "/forge/bin";
inline constexpr const char* kSuperviseDir = "/forge/run";
inline constexpr const char* kSuperviseGo = "go";
inline constexpr const char* kSuperviseEnv = "env";
// CMD itself, one argument per NUL-terminated entry, when the supervisor's
// own command line names none.
inline constexpr const char* kSuperviseArgv = "argv";
// The status line the supervisor writes when CMD has ended, to
// /dev/termination-log (the container's terminationMessage) and, followed by
// CMD's kept stdout and then its stderr, to its own stdout (the container's
// log): "forge-supervise: exit=N timed_out=0|1 truncated=0|1 stdout=BYTES
// stderr=BYTES". exit is CMD's status (128+signal when killed). When the
// line and the output fit in kTerminationMessageBytes, the termination
// message carries the output too.
inline constexpr const char* kSuperviseTag = "forge-supervise: ";
// The supervisor's own failures, said on that line with exit=: no input
// within its wait, or CMD could not start.
inline constexpr int kSuperviseNoInput = 125;
// What the kubelet keeps of a termination message.
inline constexpr unsigned kTerminationMessageBytes = 4096;
// The process name a supervisor takes once CMD has ended (held pods):
// forge-box done reads it from /proc/1/comm, which no other process may set.
inline constexpr const char* kSuperviseDoneName = "forge-held";

// verify: its stdin is a tar archive (ustar, pax long names), read up to the
// archive's end blocks (never to EOF: a v4 exec cannot close stdin) and
// acted on once the sweep has left the sandbox fit:
//   kVerifyArgv   the verifier's command, NUL-terminated entries; with
//                 --shebang its first entry is a script run by its "#!" line
//                 (a script without one under /bin/sh); never from PATH
//   kVerifyEnv    NAME=VALUE entries added to its environment
//   tests/...     unpacked into /tests (made afresh by the sweep's --clear)
// Its stdout is the sweep's lines, then (when the sweep was fit) one status
// line and the bytes it counts, in its order: "forge-verify: exit=N
// timed_out=0|1 truncated=0|1 stdout=B stderr=B reward.txt=B reward.json=B
// evidence=B" (a reward file's B is -1 when it is missing or not a regular
// file; a symlink is never followed; at most --reward BYTES + 1 of each is
// sent; evidence is the tracer's report, verify/tracer.h, -1 with
// --no-trace).
// Nothing else writes to it: every other process was stopped, and forge-box
// is not dumpable.
inline constexpr const char* kVerifyArgv = "argv";
inline constexpr const char* kVerifyEnv = "env";
inline constexpr const char* kVerifyTests = "tests/";
inline constexpr const char* kVerifyTag = "forge-verify: ";
// verify: another forge-box verify of this sandbox was still alive after
// SIGKILL (each verify first ends any other; forge-box verify-stop ends them
// all: "forge-box: verify-stop: stopped N", or "left N" with exit 3).
inline constexpr int kVerifyBusy = 75;
// verify: ended the verifier's tree itself (its client gone, or a stop
// signal: forge-box verify-stop, SIGTERM/INT/HUP). It says so on its own
// stderr, which no other process can write, in a line "forge-box: verify:
// WHY: " + kVerifyTreeEnded; its report then is no verdict of the verifier's.
inline constexpr const char* kVerifyTreeEnded = "the verifier's tree was ended";

}  // namespace forge::sandbox
