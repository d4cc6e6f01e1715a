// The verifier kinds a task can name, each run inside the rollout's own
// sandbox after the agent stopped:
//   harbor   wipe /logs/verifier and /tests, upload the task's tests/ to
//            /tests, run /tests/test.sh under the deadline, read
//            /logs/verifier/reward.txt or reward.json
//   command  run a shell command; exit status 0 is reward 1, else 0
//   files    every expected file exists (and equals / contains the text);
//            the reward is the share of checks that hold
//   judge    (judge.h) a model grades an artefact against a rubric
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "sandbox/box.h"
#include "sandbox/sandbox.h"
#include "tasks/task.h"
#include "verify/verdict.h"

namespace forge::verify {

// The task's verifier exactly as lib/tasks reads it (one parser for every tool).
using VerifierSpec = tasks::Verifier;

// Reads a task record's "verifier" object, or, for a record naming a Harbor
// task directory in "path" and no verifier, that directory's tests/test.sh.
// Errors are InvalidData naming the field. A relative tests_dir resolves against
// the task's directory ("path" or "source") when it has one.
Result<VerifierSpec> VerifierSpecFromTask(const records::Json& task, const Env& env);

// Where Harbor's contract puts things inside the sandbox.
inline constexpr const char* kTestsDir = "/tests";
inline constexpr const char* kVerifierLogs = "/logs/verifier";
inline constexpr size_t kMaxRewardBytes = 64 * 1024;

// What a verification of a held sandbox knows besides the task.
struct VerifyContext {
  // When set and it a stop is requested, a running test.sh or command is killed
  // (the verdict is then `cancelled`).
  const StopToken* cancel = nullptr;
  // The "tamper" object of an earlier verification of the same sandbox: its
  // findings stand, and what it wrote is the verifier's.
  const Json* previous_tamper = nullptr;
  // forge-launch's record of the moment the harness started (sandbox/box.h).
  std::optional<sandbox::Baseline> baseline;
  // Without runtime evidence the verdict is infra_error (excluded), not an
  // unchecked pass.
  bool require_evidence = false;
  // false: no watch at all, as on a backend without evidence (the
  // benchmark's baseline of what the evidence costs).
  bool watch = true;
  // > 0: the one-stream verification's exec deadline (RunOptions).
  double stream_timeout = 0;
};

// Both prepare the sandbox first (hardening.h) and watch the verifier while
// it runs (watch.h): evidence that the agent reached into its machinery
// makes the verdict `tampered`, whatever the verifier said. A reward left by
// a test.sh that a signal ended (exit status above 128) is not trusted.
Verdict RunHarbor(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                  const VerifyContext& context = {});
Verdict RunCommand(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                   const VerifyContext& context = {});
Verdict RunFiles(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold);

// The last max_bytes of stdout and stderr, for the verdict's log_tail.
std::string LogTail(const std::string& out, const std::string& err, size_t max_bytes = 2048);

}  // namespace forge::verify
