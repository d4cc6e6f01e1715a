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

}  // namespace forge::sandbox
