#include "verify/commands.h"

#include <cstdio>
#include <ctime>
#include <map>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include "store/store.h"
#include "verify/fold.h"
#include "verify/metrics.h"
#include "verify/rollout_fields.h"
#include "verify/tool_use.h"

namespace forge::verify {

using records::Json;

Status ReadTrials(const std::vector<std::string>& inputs, Env& env, std::vector<Trial>* trials,
                  std::vector<Json>* records) {
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
  const size_t folded = FoldByRollout(trials, records);
  if (folded > 0) {
    env.Warn(fmt::format("{} duplicate verdict(s) folded: the last verdict of each rollout id counts", folded));
  }
  std::map<std::string, int64_t> unknown;
  for (const auto& trial : *trials) {
    if (!trial.known_outcome) ++unknown[trial.outcome_name];
  }
  for (const auto& [name, count] : unknown) {
    env.Warn(fmt::format("{} verdict(s) with outcome \"{}\", which this forge does not know: counted as failed "
                         "trials with reward 0", count, name));
  }
  if (bad > 0) return Status::InvalidData(fmt::format("{} record(s) without a usable verdict", bad));
  return Status::Ok();
}

Status Print(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    if (errno == EPIPE) return Status::OutputClosed();
    return Status::IoError("stdout: write failed");
  }
  return Status::Ok();
}

std::string MadeAt(const Env& env) {
  return fmt::format("{:%Y-%m-%d %H:%M:%S} UTC", fmt::gmtime(static_cast<std::time_t>(env.Now())));
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
