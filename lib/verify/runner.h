// `forge-verify run`: reads rollout records, verifies each in its held
// sandbox, writes the record with a "verdict" object added to stdout and to
// the store, then releases the sandbox.
//
// Records are verified as they arrive by `jobs` workers, so with jobs > 1
// the output order is the order verifications finish. A record forge-verify
// cannot act on (no rollout id, task not found, broken verifier spec) is
// reported as "file:line: reason", produces no output and keeps its sandbox,
// so nothing is lost and it can be verified again once fixed.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "store/store.h"
#include "verify/backends.h"
#include "verify/judge.h"

namespace forge::verify {

struct RunOptions {
  Env* env = nullptr;  // required: reports, progress, the stop, the environment
  std::vector<std::string> inputs = {"-"};
  std::vector<std::string> task_files;  // JSONL task records, looked up by id
  double threshold = 1.0;
  int jobs = 1;
  bool keep = false;           // leave sandboxes for inspection
  double timeout_override = 0; // > 0: replaces every task's verifier timeout
  // > 0: the deadline of a one-stream verification's exec (k8s); 0: the
  // verifier's timeout and the sweep's, upload's and answer's slack.
  double stream_timeout = 0;
  bool strict = false;         // the first bad input line is an error
  // A sandbox whose verifier cannot be watched (not docker, not root, the
  // engine on another host) gets infra_error rather than an unchecked verdict.
  bool require_evidence = false;
  JudgeOptions judge;
  sandbox::k8s::K8sOptions k8s;  // reaching the cluster of k8s sandboxes
};

struct RunSummary {
  size_t verified = 0;
  size_t passed = 0;
  size_t negative = 0;   // every outcome but passed
  size_t skipped = 0;    // records that could not be acted on
  std::map<std::string, size_t> outcomes;
};

class Runner {
 public:
  // store may be null (verdicts go to stdout only; tasks must be embedded or
  // given as files). backends may be replaced for tests.
  Runner(RunOptions options, store::Store* store, records::JsonlWriter* out);

  Backends& backends() { return backends_; }
  Judge& judge() { return judge_; }

  // Runs to the end of the input or a stop. The Status is the worst
  // failure of forge itself (bad input lines, store writes, closed stdout);
  // the verdicts are in the summary.
  Status Run(RunSummary* summary);

  // A verified record and the sandbox it was verified in, still held: the
  // caller writes the record out first and releases the sandbox after.
  struct Verified {
    records::Json record;
    std::unique_ptr<sandbox::Sandbox> sandbox;
  };
  // Verifies one record and stores its verdict; or says why it could not
  // (then the sandbox is left alone).
  Result<Verified> VerifyOne(const records::Json& record);
  // Releases unless --keep; a failure is a warning naming the sandbox.
  void Finish(Verified& verified);

 private:
  Status LoadTasks();
  Result<records::Json> FindTask(const records::Json& record, const std::string& task_id);
  Result<std::string> Artefact(const records::Json& record, const VerifierSpec& spec,
                               sandbox::Sandbox* sandbox);

  RunOptions options_;
  store::Store* store_;
  records::JsonlWriter* out_;
  Backends backends_;
  Judge judge_;
  std::map<std::string, records::Json> tasks_;
};

// The final assistant text of a rollout from its recorded calls: the last
// response's message content (chat completions, Anthropic, Responses forms).
std::string FinalAnswerFromCalls(const std::vector<store::CallRecord>& calls);

}  // namespace forge::verify
