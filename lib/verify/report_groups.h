// `forge-verify report [--by FIELD]`: the per-task report of each group of
// records (by harness, model, policy version, or any record field), each
// group's pass@k and pass^k with a bootstrap interval over its tasks
// (bootstrap.h; a group's own stream, seeded from the seed and its name), the
// pass@k curve of each group, and each group's behaviour from the recorded
// calls (behaviour.h) when stores are given. Groups that are numbers (policy
// versions) are a trend: the page draws them as a learning curve.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "verify/attempts.h"
#include "verify/behaviour.h"
#include "verify/bootstrap.h"
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
  // pass@k and pass^k over the group's tasks, with the percentile bootstrap
  // over tasks; empty when not asked for, or with fewer than 2 tasks (one
  // task cannot be resampled into an interval).
  std::vector<KIntervals> intervals;
};

// The bootstrap interval over a report's tasks of each k's mean pass@k and
// pass^k; empty below 2 tasks.
std::vector<KIntervals> TaskBootstrap(const Report& report, const BootstrapSettings& settings, uint64_t seed);

// A group name that is a number, as one.
std::optional<double> NumberOf(const std::string& name);

// A group's report; a k larger than one of its tasks' valid trials is
// refused with the group named.
Result<GroupReport> BuildGroupReport(const std::string& name, const std::vector<const Attempt*>& attempts,
                                     const std::vector<int64_t>& ks, bool with_behaviour);

struct GroupedReport {
  std::string by;                  // empty: one group of every record
  std::vector<GroupReport> groups;  // numbers in numeric order, others by name
  GroupReport all;                 // every record, by task (groups pooled)
  BootstrapSettings bootstrap;     // how the intervals were drawn

  // Groups that are numbers, in order: the points of a learning curve (at
  // least two, else none).
  std::vector<const GroupReport*> Trend() const;
};

Result<GroupedReport> BuildGroupedReport(const std::vector<Attempt>& attempts, const std::string& by,
                                         const std::vector<int64_t>& ks, bool with_behaviour,
                                         const BootstrapSettings& bootstrap = {});

records::Json GroupedReportToJson(const GroupedReport& report);
std::string GroupedReportToTable(const GroupedReport& report);
// One row per group: trials, tool-use shares, self-verification, recovery,
// turns and tokens.
std::string BehaviourTable(const std::string& heading, const std::vector<const GroupReport*>& groups);

}  // namespace forge::verify
