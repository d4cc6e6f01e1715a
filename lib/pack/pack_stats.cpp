#include "pack/pack_stats.h"

#include <algorithm>

#include <fmt/format.h>


namespace forge::pack {
namespace {

double CpuNow(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

Stopwatch::Stopwatch(clockid_t cpu_clock) : cpu_clock_(cpu_clock), wall_(Clock::now()), cpu_(CpuNow(cpu_clock)) {}

void Stopwatch::AddTo(StageTime& stage) {
  auto wall = Clock::now();
  double cpu = CpuNow(cpu_clock_);
  stage.wall += std::chrono::duration<double>(wall - wall_).count();
  stage.cpu += cpu - cpu_;
  wall_ = wall;
  cpu_ = cpu;
}

Json PackStats::ToJson() const {
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

Status SkippedInput(const PackStats& stats) {
  const int64_t skipped = stats.malformed_lines + stats.bad_records;
  if (skipped == 0) return Status::Ok();
  return Status::InvalidData(fmt::format("{} input line{} skipped ({} malformed, {} lacking required fields)", skipped,
                                         skipped == 1 ? "" : "s", stats.malformed_lines, stats.bad_records));
}

void PrintSummary(const Json& s, Env& env) {
  env.Note(fmt::format(
      "{} rollouts, {} calls → {} samples ({:.2f} per rollout, merge ratio {:.2f}, {} from messages); "
      "trainable tokens {}/{} ({:.1f}%); boundaries clean {} realign {} fork {}",
      s["rollouts"].get<int64_t>(), s["calls"].get<int64_t>(), s["samples"].get<int64_t>(),
      s["samples_per_rollout"].get<double>(), s["merge_ratio"].get<double>(),
      s["samples_from_messages"].get<int64_t>(), s["trainable_tokens"].get<int64_t>(), s["tokens"].get<int64_t>(),
      100 * s["trainable_token_ratio"].get<double>(), s["boundaries"]["clean"].get<int64_t>(),
      s["boundaries"]["realign"].get<int64_t>(), s["boundaries"]["fork"].get<int64_t>()));
  std::string dropped;
  for (const auto& [reason, n] : s["dropped"].items()) dropped += fmt::format(" {} {}", reason, n.get<int64_t>());
  env.Note(fmt::format("written {}; dropped:{}; filtered: not passed {}, below min reward {}; "
                       "rollouts without calls {}",
                       s["written"].get<int64_t>(), dropped.empty() ? " none" : dropped,
                       s["filtered"]["not_passed"].get<int64_t>(), s["filtered"]["below_min_reward"].get<int64_t>(),
                       s["rollouts_without_calls"].get<int64_t>()));
  if (s.contains("rl")) {
    const Json& r = s["rl"];
    env.Note(fmt::format("rl: {} groups ({} zero-variance), {} rows in {} batches; utilisation {:.2f}%, "
                         "padding waste {} tokens, {:.2f}% of ideal ({} batches)",
                         r["groups"].get<int64_t>(), r["zero_variance_groups"].get<int64_t>(),
                         r["rows"].get<int64_t>(), r["batches"].get<int64_t>(), 100 * r["utilisation"].get<double>(),
                         r["padding_waste"].get<int64_t>(), 100 * r["utilisation_vs_ideal"].get<double>(),
                         r["ideal_batches"].get<int64_t>()));
  }
}

}  // namespace forge::pack
