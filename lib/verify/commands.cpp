#include "verify/commands.h"

#include <cstdio>
#include <fmt/format.h>

#include "store/store.h"
#include "verify/fold.h"
#include "verify/metrics.h"
#include "verify/rollout_fields.h"
#include "verify/tool_use.h"

namespace forge::verify {

using records::Json;

// Reads the trials of every verified record, the last verdict of each
// rollout (fold.h; *folded says how many earlier ones were dropped); a record
// without a usable verdict is reported as file:line and skipped, and
// afterwards InvalidData.
Status ReadTrials(const std::vector<std::string>& inputs, Env& env, std::vector<Trial>* trials,
                  std::vector<Json>* records, size_t* folded) {
  size_t bad = 0;
  Status read = records::ForEachRecord(inputs, env, {}, [&](records::Record& r) -> Status {
    auto trial = TrialFromRecord(r.json);
    if (!trial.ok()) {
      env.Error(r.where() + ": " + trial.status().message());
      ++bad;
      return Status::Ok();
    }
    trials->push_back(std::move(*trial));
    if (records != nullptr) records->push_back(std::move(r.json));
    return Status::Ok();
  });
  FORGE_RETURN_IF_ERROR(read);
  const size_t dropped = FoldByRollout(trials, records);
  if (folded != nullptr) *folded = dropped;
  if (bad > 0) return Status::InvalidData(fmt::format("{} record(s) without a usable verdict", bad));
  return Status::Ok();
}

void WarnIfFolded(size_t folded, Env& env) {
  if (folded == 0) return;
  env.Warn(fmt::format("{} duplicate verdict(s) folded: the last verdict of each rollout id counts", folded));
}

Status Print(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    if (errno == EPIPE) return Status::OutputClosed();
    return Status::IoError("stdout: write failed");
  }
  return Status::Ok();
}

Status ReportCommand(const ReportOptions& options) {
  if (!options.by.empty() || !options.stores.empty() || !options.html.empty()) return GroupedReportCommand(options);
  std::vector<Trial> trials;
  size_t folded = 0;
  Status read = ReadTrials(options.inputs, *options.env, &trials, nullptr, &folded);
  // Bad lines were reported; a report of the good ones still helps, but the
  // exit status says data was skipped.
  if (!read.ok() && read.kind() != Kind::kInvalidData) return read;
  auto report = BuildReport(trials, options.ks);
  if (!report.ok()) return report.status();
  report->duplicates_folded = static_cast<int64_t>(folded);
  WarnIfFolded(folded, *options.env);
  FORGE_RETURN_IF_ERROR(options.format == Format::kTable ? Print(ReportToTable(*report))
                                                         : Print(ReportToJson(*report).dump(2) + "\n"));
  return read;
}

Status SolvableCommand(const SolvableCommandOptions& options) {
  std::vector<Trial> trials;
  Status read = ReadTrials(options.inputs, *options.env, &trials);
  if (!read.ok() && read.kind() != Kind::kInvalidData) return read;
  auto rows = CheckSolvable(trials, options.check);
  if (!rows.ok()) return rows.status();
  size_t defects = 0;
  if (options.format == Format::kTable) {
    FORGE_RETURN_IF_ERROR(Print(SolvableToTable(*rows, options.check.k)));
  }
  for (const auto& row : *rows) {
    if (options.format == Format::kJson) FORGE_RETURN_IF_ERROR(Print(SolvableToJson(row, options.check.k).dump() + "\n"));
    if (HasDefect(row)) ++defects;
  }
  if (!read.ok()) return read;
  if (defects > 0) {
    return Status::Negative(fmt::format("{} of {} task(s) are broken or trivial", defects, rows->size()));
  }
  return Status::Ok();
}

Status ToolUseCommand(const ToolUseOptions& options) {
  if (options.store_path.empty()) return Status::InvalidArgument("tool-use reads the recorded calls: give --store");
  store::OpenOptions open;
  open.read_only = true;
  auto store = store::Store::Open(options.store_path, open);
  if (!store.ok()) return store.status().Prefixed(options.store_path);
  std::vector<Trial> trials;
  std::vector<Json> records;
  Status read = ReadTrials(options.inputs, *options.env, &trials, &records);
  if (!read.ok() && read.kind() != Kind::kInvalidData) return read;
  std::map<std::string, HarnessToolUse> by_harness;
  HarnessToolUse overall;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string rollout_id = RolloutIdOf(records[i]);
    auto calls = (*store)->calls().CallsOfRollout(rollout_id);
    if (!calls.ok()) return calls.status().Prefixed("store: calls of " + rollout_id);
    RolloutToolUse use = ToolUseOfCalls(*calls, trials[i].harness);
    const bool valid = CountsAsTrial(trials[i].outcome);
    const bool passed = trials[i].outcome == Outcome::kPassed;
    by_harness[trials[i].harness.empty() ? "(unnamed)" : trials[i].harness].Add(use, valid, passed);
    overall.Add(use, valid, passed);
  }
  Json harnesses = Json::object();
  for (const auto& [name, use] : by_harness) harnesses[name] = use.ToJson();
  FORGE_RETURN_IF_ERROR(Print(Json{{"harnesses", harnesses}, {"overall", overall.ToJson()}}.dump(2) + "\n"));
  return read;
}

}  // namespace forge::verify
