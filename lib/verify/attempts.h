// Verified rollout records as the grouped report and compare read them: each
// record's trial, the value of the field it is grouped by, and, when stores
// are given, its behaviour from the recorded calls (behaviour.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "records/jsonl.h"
#include "store/store.h"
#include "verify/behaviour.h"
#include "verify/metrics.h"

namespace forge::verify {

struct Attempt {
  Trial trial;
  std::string rollout_id;
  std::string group;                          // the --by field's value
  std::optional<RolloutBehaviour> behaviour;  // when stores were read
};

// A record field by dotted path ("harness", "task.metadata.level"): a string
// as it is, any other value as its JSON text; nullopt when absent or null.
std::optional<std::string> FieldOf(const records::Json& record, const std::string& path);

// What a group is called when the field is absent.
inline constexpr const char* kNoValue = "(none)";

// Stores searched in order for a rollout's calls: a run's calls may live in
// another store than the other run's (one proxy each).
class CallSource {
 public:
  static Result<CallSource> Open(const std::vector<std::string>& paths);
  bool empty() const { return stores_.empty(); }
  // The calls of the first store that has any (none: an empty vector).
  Result<std::vector<store::CallRecord>> CallsOf(const std::string& rollout_id);

 private:
  std::vector<std::unique_ptr<store::Store>> stores_;
};

struct AttemptOptions {
  std::string by;       // empty: every attempt in one group, "all"
  CallSource* calls = nullptr;  // null: no behaviour
};

// Reads the attempts of `inputs`. `model` and `policy_version`, when the
// record lacks them, are those of the rollout's first recorded call. Bad
// records are reported to env as file:line and skipped (InvalidData
// afterwards, with the others read, as ReadTrials does).
Status ReadAttempts(const std::vector<std::string>& inputs, const AttemptOptions& options, Env& env,
                    std::vector<Attempt>* attempts);

}  // namespace forge::verify
