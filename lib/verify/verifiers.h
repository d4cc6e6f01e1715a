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

// cancel, when set and a stop is requested, kills a running test.sh or command
// (the verdict is then `cancelled`). Both prepare the sandbox first
// (hardening.h); previous_tamper is the "tamper" object of an earlier
// verification of the same sandbox, which stands.
Verdict RunHarbor(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                  const StopToken* cancel = nullptr, const Json* previous_tamper = nullptr);
Verdict RunCommand(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                   const StopToken* cancel = nullptr, const Json* previous_tamper = nullptr);
Verdict RunFiles(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold);

// The last max_bytes of stdout and stderr, for the verdict's log_tail.
std::string LogTail(const std::string& out, const std::string& err, size_t max_bytes = 2048);

}  // namespace forge::verify
