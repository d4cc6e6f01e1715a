#include "pack/pack.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>

#include <fmt/format.h>

#include "cli/diagnostics.h"
#include "cli/signals.h"
#include "pack/call_reader.h"
#include "pack/messages.h"
#include "pack/rl_batches.h"
#include "store/store.h"

namespace forge::pack {
namespace {

using Clock = std::chrono::steady_clock;

double CpuNow(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Where a run's time goes, per stage, for --stats: wall seconds, and process
// CPU seconds (all threads; what a loaded machine does not inflate).
struct StageTime {
  double wall = 0, cpu = 0;
};
struct StageTimes {
  StageTime read;      // input records, calls from the stores, prompt delta decoding
  StageTime assemble;  // merge or per-call, boundary classes, validation
  StageTime plan;      // rl: advantages and best-fit-decreasing packing
  StageTime write;     // rl: safetensors files and the index; other formats: the records
  StageTime total;
  Json ToJson(double StageTime::*field) const {
    return {{"read", read.*field}, {"assemble", assemble.*field}, {"plan", plan.*field},
            {"write", write.*field}, {"total", total.*field}};
  }
};
// CPU time by the process's clock (all threads), or by the calling thread's
// alone where two threads work on different stages at once.
class Stopwatch {
 public:
  explicit Stopwatch(clockid_t cpu_clock = CLOCK_PROCESS_CPUTIME_ID)
      : cpu_clock_(cpu_clock), wall_(Clock::now()), cpu_(CpuNow(cpu_clock)) {}
  // Adds the time since the start (or the last AddTo) to `stage`, and restarts.
  void AddTo(StageTime& stage) {
    auto wall = Clock::now();
    double cpu = CpuNow(cpu_clock_);
    stage.wall += std::chrono::duration<double>(wall - wall_).count();
    stage.cpu += cpu - cpu_;
    wall_ = wall;
    cpu_ = cpu;
  }

 private:
  clockid_t cpu_clock_;
  Clock::time_point wall_;
  double cpu_;
};

struct RolloutInput {
  std::string rollout_id;
  std::string task_id;
  std::optional<double> reward;
  std::optional<bool> passed;
  Json record;
  std::string where;
};

const Json* Find(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// Reads the fields forge-pack needs; a record without a rollout id is bad input.
enum class Filter { kKept, kNotPassed, kBelowMinReward };

Filter FilterOf(const RolloutInput& in, const PackOptions& o) {
  if (o.passed_only && !in.passed.value_or(false)) return Filter::kNotPassed;
  if (o.min_reward && (!in.reward || *in.reward < *o.min_reward)) return Filter::kBelowMinReward;
  return Filter::kKept;
}

Result<RolloutInput> ParseRollout(records::Record& r) {
  RolloutInput in;
  in.where = r.where();
  const Json* id = Find(r.json, "rollout_id");
  if (!id) id = Find(r.json, "id");
  if (!id || !id->is_string() || id->get<std::string>().empty()) {
    return Status::InvalidData(in.where + ": record has no rollout_id string");
  }
  in.rollout_id = id->get<std::string>();
  const Json* task = Find(r.json, "task_id");
  in.task_id = task && task->is_string() ? task->get<std::string>() : in.rollout_id;
  const Json* verdict = Find(r.json, "verdict");
  for (const Json* source : {verdict, static_cast<const Json*>(&r.json)}) {
    if (!source) continue;
    if (const Json* reward = Find(*source, "reward"); reward && !in.reward) {
      if (!reward->is_number()) return Status::InvalidData(in.where + ": reward is not a number");
      in.reward = reward->get<double>();
    }
    if (const Json* passed = Find(*source, "passed"); passed && !in.passed) {
      if (!passed->is_boolean()) return Status::InvalidData(in.where + ": passed is not a boolean");
      in.passed = passed->get<bool>();
    }
  }
  in.record = std::move(r.json);
  return in;
}

struct Stats {
  int64_t records = 0;
  int64_t malformed_lines = 0;  // not JSON objects: never became records
  int64_t bad_records = 0;      // records without a field packing needs
  int64_t duplicate_rollouts = 0;
  int64_t filtered_not_passed = 0;
  int64_t filtered_below_min_reward = 0;
  int64_t rollouts_without_calls = 0;
  int64_t rollouts_without_reward = 0;
  AssemblyCounts assembly;
  std::map<std::string, int64_t> dropped;  // reason → samples
  int64_t written = 0;
  int64_t written_rollouts = 0;
  std::optional<RlFigures> rl;

  Json ToJson() const {
    double rollouts = static_cast<double>(std::max<int64_t>(assembly.rollouts, 1));
    Json j = {{"records", records},
              {"malformed_lines", malformed_lines},
              {"bad_records", bad_records},
              {"duplicate_rollouts", duplicate_rollouts},
              {"filtered", {{"not_passed", filtered_not_passed}, {"below_min_reward", filtered_below_min_reward}}},
              {"rollouts_without_calls", rollouts_without_calls},
              {"rollouts_without_reward", rollouts_without_reward},
              {"rollouts", assembly.rollouts},
              {"calls", assembly.calls},
              {"side_calls_excluded", assembly.side_calls},
              {"failed_calls_excluded", assembly.error_calls},
              {"samples", assembly.samples},
              {"samples_from_messages", assembly.from_messages},
              {"samples_per_rollout", static_cast<double>(assembly.samples) / rollouts},
              {"merge_ratio", assembly.samples ? static_cast<double>(assembly.calls) / static_cast<double>(assembly.samples) : 0.0},
              {"tokens", assembly.tokens},
              {"trainable_tokens", assembly.trainable_tokens},
              {"trainable_token_ratio", assembly.tokens ? static_cast<double>(assembly.trainable_tokens) / static_cast<double>(assembly.tokens) : 0.0},
              {"boundaries", {{"clean", assembly.clean}, {"realign", assembly.realign}, {"fork", assembly.fork}}},
              {"dropped", dropped},
              {"written", written}};
    if (rl) {
      const PackingFigures& p = rl->packing;
      j["rl"] = {{"groups", rl->groups},
                 {"zero_variance_groups", rl->zero_variance_groups},
                 {"dropped_zero_variance_rollouts", rl->dropped_zero_variance_rollouts},
                 {"rows", rl->rows},
                 {"batches", p.bins},
                 {"tokens", p.tokens},
                 {"capacity", p.capacity},
                 {"padding_waste", p.padding_waste},
                 {"utilisation", p.utilisation},
                 {"ideal_batches", p.ideal_bins},
                 {"utilisation_vs_ideal", p.vs_ideal}};
    }
    return j;
  }
};

// InvalidData naming every input line that was skipped, of both kinds, so the
// count says what the file:line messages said.
Status SkippedInput(const Stats& stats) {
  const int64_t skipped = stats.malformed_lines + stats.bad_records;
  if (skipped == 0) return Status::Ok();
  return Status::InvalidData(fmt::format("{} input line{} skipped ({} malformed, {} lacking required fields)", skipped,
                                         skipped == 1 ? "" : "s", stats.malformed_lines, stats.bad_records));
}

void PrintSummary(const Json& s) {
  cli::Note(fmt::format(
      "{} rollouts, {} calls → {} samples ({:.2f} per rollout, merge ratio {:.2f}, {} from messages); "
      "trainable tokens {}/{} ({:.1f}%); boundaries clean {} realign {} fork {}",
      s["rollouts"].get<int64_t>(), s["calls"].get<int64_t>(), s["samples"].get<int64_t>(),
      s["samples_per_rollout"].get<double>(), s["merge_ratio"].get<double>(),
      s["samples_from_messages"].get<int64_t>(), s["trainable_tokens"].get<int64_t>(), s["tokens"].get<int64_t>(),
      100 * s["trainable_token_ratio"].get<double>(), s["boundaries"]["clean"].get<int64_t>(),
      s["boundaries"]["realign"].get<int64_t>(), s["boundaries"]["fork"].get<int64_t>()));
  std::string dropped;
  for (const auto& [reason, n] : s["dropped"].items()) dropped += fmt::format(" {} {}", reason, n.get<int64_t>());
  cli::Note(fmt::format("written {}; dropped:{}; filtered: not passed {}, below min reward {}; "
                        "rollouts without calls {}",
                        s["written"].get<int64_t>(), dropped.empty() ? " none" : dropped,
                        s["filtered"]["not_passed"].get<int64_t>(), s["filtered"]["below_min_reward"].get<int64_t>(),
                        s["rollouts_without_calls"].get<int64_t>()));
  if (s.contains("rl")) {
    const Json& r = s["rl"];
    cli::Note(fmt::format("rl: {} groups ({} zero-variance), {} rows in {} batches; utilisation {:.2f}%, "
                          "padding waste {} tokens, {:.2f}% of ideal ({} batches)",
                          r["groups"].get<int64_t>(), r["zero_variance_groups"].get<int64_t>(),
                          r["rows"].get<int64_t>(), r["batches"].get<int64_t>(), 100 * r["utilisation"].get<double>(),
                          r["padding_waste"].get<int64_t>(), 100 * r["utilisation_vs_ideal"].get<double>(),
                          r["ideal_batches"].get<int64_t>()));
  }
}

Json SftMessagesRecord(const Sample& s, const RolloutInput& in) {
  Json j = {{"messages", s.messages}};
  if (!s.tools.is_null()) j["tools"] = s.tools;
  j["rollout_id"] = s.rollout_id;
  j["task_id"] = s.task_id;
  j["sample_index"] = s.index;
  j["from_messages"] = s.from_messages;
  if (in.reward) j["reward"] = *in.reward;
  if (in.passed) j["passed"] = *in.passed;
  return j;
}

Json SftTokensRecord(const Sample& s) {
  std::vector<int32_t> labels(s.input_ids.size());
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = s.loss_mask[i] ? s.input_ids[i] : -100;
  return {{"input_ids", s.input_ids}, {"labels", labels}, {"loss_mask", s.loss_mask},
          {"rollout_id", s.rollout_id}, {"task_id", s.task_id}, {"sample_index", s.index}};
}

// The task's starting conversation: the record's own prompt or instruction,
// else the first call's messages up to its first assistant turn.
Json PromptOf(const RolloutInput& in, std::span<const store::CallRecord> calls) {
  if (const Json* p = Find(in.record, "prompt"); p && p->is_array()) return CanonicalMessages(*p);
  if (const Json* i = Find(in.record, "instruction"); i && i->is_string()) {
    return Json::array({{{"role", "user"}, {"content", *i}}});
  }
  for (const auto& call : calls) {
    if (call.side_call) continue;
    Json prompt = Json::array();
    for (const Json& m : CanonicalMessages(RequestMessages(call))) {
      if (m.value("role", "") == "assistant") break;
      prompt.push_back(m);
    }
    if (!prompt.empty()) return prompt;
  }
  return Json::array();
}

Json VerlPromptRecord(const RolloutInput& in, std::span<const store::CallRecord> calls, size_t index,
                      const PackOptions& o) {
  Json ground_truth = in.task_id;
  if (const Json* g = Find(in.record, "ground_truth")) ground_truth = *g;
  Json tools;
  for (const auto& call : calls) {
    if (!call.side_call && !(tools = RequestTools(call)).is_null()) break;
  }
  Json extra = {{"index", index}, {"task_id", in.task_id}, {"split", "train"}};
  if (!tools.is_null()) extra["tools"] = tools.dump();  // a string: tool schemas vary in shape
  return {{"data_source", o.data_source},
          {"prompt", PromptOf(in, calls)},
          {"ability", in.record.value("ability", "agent")},
          {"reward_model", {{"style", "rule"}, {"ground_truth", ground_truth}}},
          {"extra_info", extra},
          {"agent_name", tools.is_null() ? "single_turn_agent" : "tool_agent"}};
}

}  // namespace

Status RunPack(const PackOptions& o, records::JsonlWriter& out) {
  if (o.format == Format::kRl && o.out_dir.empty()) return Status::InvalidArgument("--format rl needs --out-dir DIR");
  if (o.format != Format::kVerlPrompts && o.stores.empty()) return Status::InvalidArgument("give at least one --store PATH");
  if (o.token_budget < 1) return Status::InvalidArgument("--token-budget must be positive");
  auto stores = o.stores.empty() ? Result<Stores>(Stores{}) : Stores::Open(o.stores);
  if (!stores.ok()) return stores.status();

  // Read every record first: RL groups need all rollouts of a task.
  const bool token_format = o.format == Format::kRl || o.format == Format::kSftTokens;
  StageTimes times;
  Stopwatch run_watch, watch;
  Stats stats;
  std::vector<RolloutInput> inputs;
  std::set<std::string> seen;
  records::ReaderOptions reader;
  reader.strict = o.strict;
  size_t malformed = 0;
  Status read = records::ForEachRecord(o.inputs, reader, [&](records::Record& r) -> Status {
    ++stats.records;
    auto in = ParseRollout(r);
    if (!in.ok()) {
      if (o.strict) return in.status();
      ++stats.bad_records;
      cli::Error(in.status().message());
      return Status::Ok();
    }
    if (!seen.insert(in->rollout_id).second) {
      ++stats.duplicate_rollouts;
      cli::Warn(fmt::format("{}: rollout {} seen before; this record is ignored", in->where, in->rollout_id));
      return Status::Ok();
    }
    inputs.push_back(std::move(*in));
    return Status::Ok();
  }, &malformed);
  if (!read.ok() && read.kind() != Kind::kInvalidData) return read;
  stats.malformed_lines = static_cast<int64_t>(malformed);
  watch.AddTo(times.read);

  std::vector<RlRollout> rl_rollouts;
  std::set<std::string> prompted_tasks;
  int64_t newest_policy = 0;
  std::vector<std::string> ids;
  std::vector<bool> wanted;
  for (const RolloutInput& in : inputs) {
    ids.push_back(in.rollout_id);
    wanted.push_back(FilterOf(in, o) == Filter::kKept);
  }
  // Rollouts go through a chunk at a time: the reader thread reads the next
  // chunk's calls while this one assembles the current chunk and writes what
  // it gave.
  std::optional<CallReader> calls_reader;
  calls_reader.emplace(*stores, std::move(ids), std::move(wanted), token_format);
  std::vector<std::vector<Sample>> good;  // per slot of the current chunk
  for (size_t k = 0; k < calls_reader->chunk_count(); ++k) {
    // Read stage: wall time is what this thread waited for the reader, CPU
    // time the reader's own.
    double waited = 0;
    const CallReader::Chunk& chunk = calls_reader->Next(&waited);
    times.read.wall += waited;
    times.read.cpu += chunk.read_cpu_seconds;
    if (!chunk.status.ok()) return chunk.status;
    if (cli::StopRequested()) return Status::Cancelled("stopped");
    const size_t begin = chunk.begin, end = chunk.end;
    good.resize(end - begin);
    watch = Stopwatch(CLOCK_THREAD_CPUTIME_ID);
    for (size_t i = begin; i < end; ++i) {
      switch (FilterOf(inputs[i], o)) {
        case Filter::kKept: break;
        case Filter::kNotPassed: ++stats.filtered_not_passed; break;
        case Filter::kBelowMinReward: ++stats.filtered_below_min_reward; break;
      }
    }
    for (size_t i = begin; i < end; ++i) {
      const RolloutInput& in = inputs[i];
      const CallReader::Slot& slot = chunk.slots[i - begin];
      std::vector<Sample>& slot_good = good[i - begin];
      slot_good.clear();
      if (!slot.wanted || o.format == Format::kVerlPrompts) continue;
      if (slot.n == 0) {
        ++stats.rollouts_without_calls;
        cli::Warn(fmt::format("{}: no recorded calls for rollout {} in any store", in.where, in.rollout_id));
        continue;
      }
      std::span<const store::CallRecord> calls = slot.Calls();
      for (const auto& c : calls) newest_policy = std::max(newest_policy, c.policy_version_end);
      std::vector<Sample> samples = Assemble(calls, o.mode, in.task_id, &stats.assembly);
      for (Sample& s : samples) {
        std::string reason = s.from_messages && token_format ? "no_token_ids" : InvalidReason(s, o.validation);
        if (reason.empty() && o.format == Format::kSftMessages &&
            (s.messages.empty() || s.messages.back().value("role", "") != "assistant")) {
          reason = "no_assistant_message";  // ids were recorded but no readable conversation
        }
        if (!reason.empty()) {
          ++stats.dropped[reason];
          continue;
        }
        slot_good.push_back(std::move(s));
      }
      if (o.format == Format::kRl) {
        if (!in.reward) {
          ++stats.rollouts_without_reward;
          stats.dropped["no_reward"] += static_cast<int64_t>(slot_good.size());
          continue;
        }
        // Kept even without a good sample: its reward still belongs to the
        // group's baseline (a truncated attempt is an outcome too).
        rl_rollouts.push_back({in.rollout_id, in.task_id, *in.reward, std::move(slot_good)});
        slot_good.clear();
      }
    }
    watch.AddTo(times.assemble);

    if (o.format == Format::kRl) continue;  // written once every rollout is in
    for (size_t i = begin; i < end; ++i) {
      const RolloutInput& in = inputs[i];
      const CallReader::Slot& slot = chunk.slots[i - begin];
      if (!slot.wanted) continue;
      if (o.format == Format::kVerlPrompts) {
        if (!prompted_tasks.insert(in.task_id).second) continue;
        Json row = VerlPromptRecord(in, slot.Calls(), prompted_tasks.size() - 1, o);
        if (row["prompt"].empty()) {
          ++stats.dropped["no_prompt"];
          cli::Warn(fmt::format("{}: task {} has no prompt, instruction or recorded call", in.where, in.task_id));
          continue;
        }
        FORGE_RETURN_IF_ERROR(out.Write(row));
        ++stats.written;
        continue;
      }
      if (good[i - begin].empty()) continue;
      for (const Sample& s : good[i - begin]) {
        FORGE_RETURN_IF_ERROR(out.Write(o.format == Format::kSftTokens ? SftTokensRecord(s) : SftMessagesRecord(s, in)));
        ++stats.written;
      }
      ++stats.written_rollouts;
    }
    watch.AddTo(times.write);
  }
  // Every chunk is in: the reader is done with the stores.
  calls_reader.reset();
  stores->Close();

  if (o.format == Format::kRl) {
    // Staleness is judged against the newest policy, which is only known now.
    int64_t current = o.policy_version.value_or(newest_policy);
    if (o.max_staleness) {
      for (RlRollout& r : rl_rollouts) {
        auto stale = [&](const Sample& s) { return current - s.policy_version_start > *o.max_staleness; };
        int64_t n = std::count_if(r.samples.begin(), r.samples.end(), stale);
        if (n) stats.dropped["stale"] += n;
        r.samples.erase(std::remove_if(r.samples.begin(), r.samples.end(), stale), r.samples.end());
      }
    }
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) return Status::CannotCreate(o.out_dir + ": " + ec.message());
    RlOptions rl;
    rl.estimator = o.estimator;
    rl.drop_zero_variance = o.drop_zero_variance;
    rl.token_budget = o.token_budget;
    rl.write_threads = o.write_threads;
    rl.out_dir = o.out_dir;
    rl.metadata = {{"forge_version", FORGE_VERSION},
                   {"assembly", o.mode == AssemblyMode::kMerge ? "merge" : "per-call"},
                   {"policy_version", std::to_string(current)}};
    RlFigures figures;
    watch = Stopwatch();
    auto batches = PlanRlBatches(rl_rollouts, rl, &figures);
    watch.AddTo(times.plan);
    if (figures.dropped_over_budget) stats.dropped["longer_than_token_budget"] += figures.dropped_over_budget;
    if (figures.dropped_zero_variance_rollouts) {
      stats.dropped["zero_variance_group_rollouts"] += figures.dropped_zero_variance_rollouts;
    }
    auto entries = WriteRlBatches(batches, rl, [] { return cli::StopRequested(); });
    if (!entries.ok()) return entries.status();
    for (const Json& entry : *entries) FORGE_RETURN_IF_ERROR(out.Write(entry));
    watch.AddTo(times.write);
    stats.written = figures.rows;
    stats.rl = figures;
  }

  Json summary = stats.ToJson();
  run_watch.AddTo(times.total);
  summary["seconds"] = times.ToJson(&StageTime::wall);
  summary["cpu_seconds"] = times.ToJson(&StageTime::cpu);
  if (!o.quiet) PrintSummary(summary);
  if (!o.stats_path.empty()) {
    std::ofstream f(o.stats_path);
    if (!(f << summary.dump(2) << "\n")) return Status::CannotCreate(o.stats_path + ": cannot write stats");
  }
  if (o.strict && !read.ok()) return read;  // the first bad line, as the reader named it
  return SkippedInput(stats);
}

}  // namespace forge::pack
