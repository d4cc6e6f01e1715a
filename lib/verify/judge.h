// The LLM judge: a model behind an OpenAI-compatible chat completions
// endpoint grades an artefact of the rollout against the task's rubric and
// answers {"score": 0..1, "reason": "..."}. Answers are cached in the store
// by task, judge model, rubric and artefact hash, so verifying the same
// rollout again gives the same verdict without a call. A judge that cannot
// be reached or answers nonsense is a verifier_error, never a failed rollout.
#pragma once

#include <mutex>
#include <map>
#include <string>

#include "base/env.h"
#include "records/jsonl.h"
#include "store/store.h"
#include "verify/verdict.h"
#include "verify/verifiers.h"

namespace forge::verify {

struct JudgeOptions {
  std::string url;            // base URL, e.g. http://127.0.0.1:8000/v1
  std::string default_model;  // when the task names none
  std::string api_key;        // sent as a Bearer token when set
  int attempts = 3;           // on transport errors, 429 and 5xx
  double retry_delay_seconds = 0.5;
};

class Judge {
 public:
  // store may be null: then answers are cached for this process only. A stop
  // requested on env ends the wait before a retry (env must outlive the judge).
  Judge(JudgeOptions options, store::Store* store, Env& env);

  Verdict Grade(const std::string& task_id, const VerifierSpec& spec, const std::string& artefact,
                double threshold);

  // The cache key: SHA-256 over task, model, rubric and artefact hash.
  static std::string CacheKey(const std::string& task_id, const std::string& model,
                              const std::string& rubric, const std::string& artefact);

  int calls_made() const { return calls_made_; }

 private:
  // Result: the parsed {score, reason}, or why not.
  Result<records::Json> Ask(const std::string& model, const VerifierSpec& spec,
                            const std::string& artefact);

  JudgeOptions options_;
  store::Store* store_;
  Env& env_;
  std::mutex mutex_;
  std::map<std::string, records::Json> memory_;
  int calls_made_ = 0;
};

// Pulls {"score": x, "reason": "..."} out of a judge's reply text (which may
// wrap it in prose or a code fence). InvalidData when there is none or the score
// is not a number in [0, 1].
Result<records::Json> ParseJudgeReply(const std::string& content);

}  // namespace forge::verify
