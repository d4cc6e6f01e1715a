// The shell script a one-shot sandbox runs as its own process. The
// container's command is only a bootstrap that reads this script from stdin
// and evaluates it, so the rollout's secret (in env and config files) never
// enters the container's configuration, where `docker inspect` would show it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sandbox/sandbox.h"

namespace forge::sandbox {

// The container command: `/bin/sh -c <OneShotBootstrap()>`; stdin carries the script.
std::string OneShotBootstrap();

// Writes job.files, exports job.exec.env, enters workdir and runs
// job.exec.argv with stdin from /dev/null. The shell stays the parent (PID 1
// in a container) and ends the harness after lifetime_seconds, so a sandbox
// whose launcher died ends by itself; when it exits, the kernel kills whatever
// the harness left behind. A file it cannot write ends it with
// kOneShotSetupExit and a "forge-setup:" line on stderr before anything ran.
//
// With a held_marker the sandbox outlives the command, for forge-verify: the
// command's deadline (job.exec.timeout_seconds) is kept by the script itself,
// which kills every process but PID 1 when it passes (as an exec'd sandbox's
// deadline does), and once the command has ended the shell writes the line
// "<held_marker> <exit status> <1 if the deadline killed it, else 0>" on
// stderr and stays as the keep-alive PID 1 for the rest of the lifetime.
// Its deadline kill is `kill -KILL -1`: only ever run it as PID 1 of its own
// pid namespace. With box (forge-box is mounted, sandbox/box.h) the shell
// execs forge-box's keep-alive once the command has ended, and the
// deadline's watchdog starts before the command: from then on PID 1 runs
// nothing from the sandbox's PATH, which the agent may have filled.
std::string OneShotScript(const OneShot& job, const std::string& workdir, int64_t lifetime_seconds,
                          const std::string& held_marker = "", bool box = false);

inline constexpr int kOneShotSetupExit = 199;

// 'text' with every ' as '\''; safe for any bytes but NUL.
std::string ShellQuote(std::string_view text);

}  // namespace forge::sandbox
