// `forge-verify report --by FIELD`: the per-task report of each group of
// records (by harness, model, policy version, or any record field), the
// pass@k curve of each group, and each group's behaviour from the recorded
// calls (behaviour.h) when stores are given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "verify/attempts.h"
#include "verify/behaviour.h"
#include "verify/metrics.h"

namespace forge::verify {

// pass@k and pass^k (means over tasks) for k = 1 .. the fewest valid trials
// of any task (at most kMaxCurveK): the curve the page draws.
inline constexpr int64_t kMaxCurveK = 64;
std::vector<KValues> PassCurve(const Report& report);

struct GroupReport {
  std::string name;
  Report report;
  std::vector<KValues> curve;
  std::optional<BehaviourSummary> behaviour;  // when the calls were read
};

// A group's report; a k larger than one of its tasks' valid trials is
// refused with the group named.
Result<GroupReport> BuildGroupReport(const std::string& name, const std::vector<const Attempt*>& attempts,
                                     const std::vector<int64_t>& ks, bool with_behaviour);

struct GroupedReport {
  std::string by;                  // empty: one group of every record
  std::vector<GroupReport> groups;  // numbers in numeric order, others by name
  GroupReport all;                 // every record, by task
};

Result<GroupedReport> BuildGroupedReport(const std::vector<Attempt>& attempts, const std::string& by,
                                         const std::vector<int64_t>& ks, bool with_behaviour);

records::Json GroupedReportToJson(const GroupedReport& report);
std::string GroupedReportToTable(const GroupedReport& report);
// One row per group: trials, tool-use shares, self-verification, recovery,
// turns and tokens.
std::string BehaviourTable(const std::string& heading, const std::vector<const GroupReport*>& groups);

}  // namespace forge::verify
