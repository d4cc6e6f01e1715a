// Making a sandbox the agent left fit for its verifier, and saying who is to
// blame when it is not.
//
// The agent is root in its sandbox and the verifier runs in the same sandbox,
// so before the verifier runs forge-verify
//   1. stops every process the agent left (all but PID 1, until none is
//      left), unless the task keeps them (verifier.keep_processes);
//   2. records tamper evidence: on Docker, GET /containers/{id}/changes lists
//      what differs from the image, and a change to the verifier's toolchain
//      (the shells, the commands and files the test script names or sources,
//      the loader's preload list, Python and pytest start-up hooks), to
//      /tests or to /logs/verifier makes the attempt `tampered`;
//   3. (harbor) moves /tests and /logs/verifier aside whole, as a rename in
//      their own parent directory (which neither permissions inside them nor
//      symlinks can block), and makes them afresh;
//   4. checks that the file system holding them has room for a reward.
// A step that fails while the sandbox is still there failed on the state the
// agent left: `failed`, with the reason. Only an engine that does not answer,
// a sandbox that is gone, or forge's own error is `infra_error`.
//
// Guarantees by backend: docker keeps all of the above. k8s stops processes
// and clears the directories the same way; local clears them but stops no
// process (its commands are the host's: kill -1 would reach the user's own).
// Neither lists changes, so they record `"tamper": {"checked": false}` and
// cannot detect a doctored shell or interpreter (docs/forge-verify.md
// "Rewards the agent cannot forge").
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "sandbox/sandbox.h"
#include "tasks/task.h"

namespace forge::verify {

using records::Json;

// One entry of the Engine API's change list: kind 0 modified, 1 added, 2 deleted.
struct FileChange {
  std::string path;
  int kind = 0;
};

// What the verifier will run and read, named by the test script (or the
// verifier command): command words, and the files it sources.
struct Toolchain {
  std::set<std::string> commands;  // basenames: "python3", "pytest", "sh"
  std::set<std::string> sourced;   // absolute paths; $HOME and ~ read as /root
};
Toolchain ToolchainOfScript(std::string_view script);

// The changes that touch the toolchain, each as {"path", "kind", "why"}.
// exists_elsewhere(name, dir) says whether a command `name` is found in a bin
// directory other than `dir` that the change list leaves alone: an added
// command counts only when it shadows one of the image's.
using ShadowCheck = std::function<bool(const std::string& name, const std::string& dir)>;
Json ToolchainChanges(const std::vector<FileChange>& changes, const Toolchain& toolchain,
                      const ShadowCheck& exists_elsewhere);

// The shell script run as root before the verifier (steps 1, 3 and 4 above),
// and what its output said.
std::string SweepScript(bool stop_processes, bool clear_harbor_dirs, const std::string& tag);
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
  std::string script;  // the test script or command, for the toolchain
  // A "tamper" object from an earlier verification of the same sandbox: it
  // stands, as the changes now include that verification's own.
  const Json* previous_tamper = nullptr;
};

struct Preparation {
  Json sweep = Json::object();   // the verdict's "sweep"
  Json tamper = Json::object();  // the verdict's "tamper"
  bool tampered = false;
  std::string fault;  // non-empty: the agent left the sandbox unfit; verdict failed
};

// Steps 1-4. An error is forge's or the engine's (infra_error); everything
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
