// Making a sandbox the agent left fit for its verifier, and saying who is to
// blame when it is not.
//
// The agent is root in its sandbox and the verifier runs in the same sandbox,
// so before the verifier runs forge-verify
//   1. stops every process the agent left: on docker with forge-box (static,
//      mounted read-only) every process that was not alive when the harness
//      started (forge-launch's baseline: the environment's services stay),
//      elsewhere every process but PID 1 with the sandbox's /bin/sh; unless
//      the task keeps them (verifier.keep_processes);
//   2. (harbor) moves /tests and /logs/verifier aside whole, as a rename in
//      their own parent directory (which neither permissions inside them nor
//      symlinks can block), and makes them afresh;
//   3. checks that the file system holding them has room for a reward.
// The evidence of tampering is then taken while the verifier runs
// (verify/watch.h). A step that fails while the sandbox is still there
// failed on the state the agent left: `failed`, with the reason. Only an
// engine that does not answer, a sandbox that is gone, or forge's own error
// is `infra_error`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "sandbox/box.h"
#include "sandbox/sandbox.h"
#include "tasks/task.h"

namespace forge::verify {

using records::Json;

// The sweep (steps 1-3) as the sandbox's /bin/sh runs it where forge-box is
// not mounted (k8s, local), and as forge-box's arguments where it is; both
// print the same lines, which ParseSweepOutput reads.
std::string SweepScript(bool stop_processes, bool clear_harbor_dirs, const std::string& tag);
std::vector<std::string> SweepArgv(bool stop_processes, bool clear_harbor_dirs, const std::string& tag,
                                   const std::optional<sandbox::Baseline>& baseline);
struct SweepReport {
  int stopped = -1;             // processes found and stopped; -1 when not asked
  int left = 0;                 // processes that would not stop
  std::string fault;            // why the sandbox cannot be verified; empty when fit
  int64_t min_avail_kib = -1;   // least free space of /tests and /logs/verifier; -1 unknown
};
SweepReport ParseSweepOutput(std::string_view out, int exit_code);

// Below this much free space the verifier could not write a reward.
inline constexpr int64_t kMinFreeKib = 1024;

struct PrepareOptions {
  bool clear_harbor_dirs = false;
  bool stop_processes = true;
  // forge-launch's record of the processes alive when the harness started:
  // they are the environment's and stay.
  std::optional<sandbox::Baseline> baseline;
};

struct Preparation {
  Json sweep = Json::object();  // the verdict's "sweep"
  std::string fault;  // non-empty: the agent left the sandbox unfit; verdict failed
};

// The verdict's "sweep" and the fault from one sweep's report (a pass of
// PrepareSandbox's, or forge-box verify's first step).
void NoteSweep(const SweepReport& report, Preparation* prep);

// forge-box verify's argv up to the verifier's own options: the sweep of
// steps 1-3 as PrepareSandbox would ask for it, in the same stream as the
// verifier (verifiers.cpp, a sandbox where each exec is an API request).
// The sweep runs as the sandbox's own user there (noted in prep).
std::vector<std::string> BoxVerifyArgv(const sandbox::Sandbox& sandbox, const PrepareOptions& options,
                                       Preparation* prep);

// Steps 1-3. An error is forge's or the engine's (infra_error); everything
// the agent's state causes comes back as Preparation::fault.
Result<Preparation> PrepareSandbox(sandbox::Sandbox& sandbox, const PrepareOptions& options);

// After a sandbox step failed with `status`: empty when the failure is the
// infrastructure's (engine unreachable, sandbox gone), else the reason it is
// the agent's (the sandbox is still there, so the step failed on its state).
std::string AgentCause(sandbox::Sandbox& sandbox, const Status& status);

// forge-verify could not attach to handle: the reason it is the agent's when
// the sandbox exists but its PID 1 ended before its deadline (the agent
// stopped the keep-alive); empty when it is the infrastructure's.
std::string AgentCauseOfLostSandbox(sandbox::Backend& backend, const sandbox::Handle& handle, const Status& status);

}  // namespace forge::verify
