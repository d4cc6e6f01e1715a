// Ending a forge-box verify that is still running in this sandbox: the one
// a stopped or timed-out forge-verify left behind (forge-box verify-stop),
// or the one a re-verification finds before it starts (forge-box verify).
#pragma once

namespace forge::box {

// Ends each forge-box verify of this pid namespace, known by its command
// line (a process's own, which no other process may write: forge-box verify
// is not dumpable), never PID 1 or this process; a process the agent dressed
// so is the agent's own, and ends as the sweep's would. SIGTERM first (its
// tracer then kills the verifier's whole tree before it exits), SIGKILL to
// what is left after wait_seconds (PTRACE_O_EXITKILL then ends its traced
// tree). Returns how many were found; *left: how many live 2 s after that.
int StopVerifies(double wait_seconds, int* left);

}  // namespace forge::box
