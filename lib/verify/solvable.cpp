#include "verify/solvable.h"

#include <algorithm>
#include <fmt/format.h>

namespace forge::verify {

namespace {

void Count(HarnessCounts& counts, const Trial& trial) {
  if (!CountsAsTrial(trial.outcome)) {
    ++counts.excluded;
    return;
  }
  ++counts.valid;
  if (trial.outcome == Outcome::kPassed) ++counts.passed;
}

}  // namespace

Result<std::vector<SolvableRow>> CheckSolvable(const std::vector<Trial>& trials,
                                               const SolvableOptions& options) {
  if (options.k < 1) return Status::InvalidArgument("-k: must be at least 1");
  std::map<std::string, SolvableRow> rows;
  for (const auto& trial : trials) {
    auto& row = rows[trial.task_id];
    row.task_id = trial.task_id;
    if (trial.harness == options.oracle_harness) {
      Count(row.oracle, trial);
    } else if (trial.harness == options.nop_harness) {
      Count(row.nop, trial);
    } else {
      Count(row.models[trial.harness.empty() ? "(unnamed)" : trial.harness], trial);
    }
  }
  if (rows.empty()) return Status::NotFound("no verdicts to check");

  std::vector<std::string> short_tasks;
  for (const auto& [id, row] : rows) {
    for (const auto& [harness, counts] : row.models) {
      if (counts.valid < options.k) {
        short_tasks.push_back(fmt::format("{} ({}: {} valid)", id, harness, counts.valid));
      }
    }
  }
  if (!short_tasks.empty()) {
    std::string list;
    for (size_t i = 0; i < short_tasks.size() && i < 10; ++i) list += (i ? ", " : "") + short_tasks[i];
    if (short_tasks.size() > 10) list += fmt::format(" and {} more", short_tasks.size() - 10);
    return Status::InvalidData(fmt::format("k={} is larger than the valid model trials of: {}", options.k, list));
  }

  std::vector<SolvableRow> out;
  for (auto& [id, row] : rows) {
    if (row.oracle.valid > 0 && row.oracle.passed < row.oracle.valid) row.flags.push_back("broken_environment");
    if (row.nop.passed > 0) row.flags.push_back("trivial");
    bool all_unsolved = !row.models.empty(), all_saturated = !row.models.empty();
    for (const auto& [harness, counts] : row.models) {
      KValues v{options.k, PassAtK(counts.valid, counts.passed, options.k),
                PassHatK(counts.valid, counts.passed, options.k)};
      if (v.pass_at_k > 0) all_unsolved = false;
      if (v.pass_hat_k < 1) all_saturated = false;
      row.model_k[harness] = v;
    }
    if (all_unsolved) row.flags.push_back("unsolved");
    if (all_saturated) row.flags.push_back("saturated");
    out.push_back(std::move(row));
  }
  return out;
}

bool HasDefect(const SolvableRow& row) {
  return std::any_of(row.flags.begin(), row.flags.end(), [](const std::string& f) {
    return f == "broken_environment" || f == "trivial";
  });
}

records::Json SolvableToJson(const SolvableRow& row, int64_t k) {
  auto counts = [](const HarnessCounts& c) {
    return records::Json{{"valid", c.valid}, {"passed", c.passed}, {"excluded", c.excluded}};
  };
  records::Json models = records::Json::object();
  for (const auto& [harness, c] : row.models) {
    records::Json m = counts(c);
    const KValues& v = row.model_k.at(harness);
    m["pass_at_k"] = v.pass_at_k;
    m["pass_hat_k"] = v.pass_hat_k;
    models[harness] = std::move(m);
  }
  return {{"task_id", row.task_id}, {"k", k},          {"oracle", counts(row.oracle)},
          {"nop", counts(row.nop)},  {"models", models}, {"flags", row.flags}};
}

std::string SolvableToTable(const std::vector<SolvableRow>& rows, int64_t k) {
  size_t width = 4;
  for (const auto& row : rows) width = std::max(width, row.task_id.size());
  width = std::min<size_t>(width, 48);
  std::string out = fmt::format("{:<{}}  {:>7} {:>7}  {:<30}  flags\n", "task", width, "oracle", "nop",
                                fmt::format("model pass@{} / pass^{}", k, k));
  for (const auto& row : rows) {
    std::string models;
    for (const auto& [harness, v] : row.model_k) {
      if (!models.empty()) models += ", ";
      models += fmt::format("{} {:.2f}/{:.2f}", harness, v.pass_at_k, v.pass_hat_k);
    }
    std::string flags;
    for (const auto& f : row.flags) flags += (flags.empty() ? "" : ",") + f;
    std::string name = row.task_id.size() > width ? row.task_id.substr(0, width - 1) + "~" : row.task_id;
    out += fmt::format("{:<{}}  {:>7} {:>7}  {:<30}  {}\n", name, width,
                       fmt::format("{}/{}", row.oracle.passed, row.oracle.valid),
                       fmt::format("{}/{}", row.nop.passed, row.nop.valid), models,
                       flags.empty() ? "ok" : flags);
  }
  return out;
}

}  // namespace forge::verify
