#include <doctest/doctest.h>

#include <cmath>

#include "verify/fold.h"
#include "verify/metrics.h"
#include "verify/solvable.h"

using forge::Kind;
using forge::verify::BuildReport;
using forge::verify::Outcome;
using forge::verify::PassAtK;
using forge::verify::PassHatK;
using forge::verify::Trial;

namespace {

// The textbook form, for comparison where the numbers are small.
double Choose(int n, int k) {
  if (k < 0 || k > n) return 0;
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

std::vector<Trial> Trials(const std::string& task, int passed, int failed, int infra = 0,
                          const std::string& harness = "model") {
  std::vector<Trial> out;
  for (int i = 0; i < passed; ++i) out.push_back({task, harness, Outcome::kPassed, 1.0});
  for (int i = 0; i < failed; ++i) out.push_back({task, harness, Outcome::kFailed, 0.0});
  for (int i = 0; i < infra; ++i) out.push_back({task, harness, Outcome::kInfraError, std::nullopt});
  return out;
}

}  // namespace

TEST_CASE("pass@k and pass^k match values worked out by hand") {
  // n=5, c=2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@3 = 1 - 1/10.
  CHECK(PassAtK(5, 2, 1) == doctest::Approx(0.4));
  CHECK(PassAtK(5, 2, 2) == doctest::Approx(0.7));
  CHECK(PassAtK(5, 2, 3) == doctest::Approx(0.9));
  CHECK(PassAtK(5, 2, 4) == 1.0);  // only 3 failures: every 4-subset holds a pass
  // pass^1 = 2/5; pass^2 = C(2,2)/C(5,2) = 1/10; pass^3 = 0 (fewer passes than k).
  CHECK(PassHatK(5, 2, 1) == doctest::Approx(0.4));
  CHECK(PassHatK(5, 2, 2) == doctest::Approx(0.1));
  CHECK(PassHatK(5, 2, 3) == 0.0);
  // n=10: pass@5 with c=3 = 1 - C(7,5)/C(10,5) = 1 - 21/252; pass^5 with c=7 = 21/252.
  CHECK(PassAtK(10, 3, 5) == doctest::Approx(1.0 - 21.0 / 252.0));
  CHECK(PassHatK(10, 7, 5) == doctest::Approx(21.0 / 252.0));
}

TEST_CASE("pass@k and pass^k at the edges: c = 0, c = n, k = n") {
  CHECK(PassAtK(4, 0, 1) == 0.0);
  CHECK(PassAtK(4, 0, 4) == 0.0);
  CHECK(PassHatK(4, 0, 2) == 0.0);
  CHECK(PassAtK(4, 4, 1) == 1.0);
  CHECK(PassHatK(4, 4, 4) == 1.0);
  CHECK(PassHatK(4, 4, 1) == 1.0);
  // k = n: pass@n is 1 as soon as one passed; pass^n only when all passed.
  CHECK(PassAtK(3, 1, 3) == 1.0);
  CHECK(PassHatK(3, 2, 3) == 0.0);
  CHECK(PassHatK(3, 3, 3) == 1.0);
  // n = k = 1
  CHECK(PassAtK(1, 1, 1) == 1.0);
  CHECK(PassAtK(1, 0, 1) == 0.0);
}

TEST_CASE("the product forms agree with the binomial forms and stay stable for large n") {
  for (int n = 1; n <= 30; ++n) {
    for (int c = 0; c <= n; ++c) {
      for (int k = 1; k <= n; ++k) {
        CHECK(PassAtK(n, c, k) == doctest::Approx(1.0 - Choose(n - c, k) / Choose(n, k)).epsilon(1e-12));
        CHECK(PassHatK(n, c, k) == doctest::Approx(Choose(c, k) / Choose(n, k)).epsilon(1e-12));
      }
    }
  }
  // C(1000, 500) overflows a double; the products do not.
  double at = PassAtK(1000, 3, 500);
  double hat = PassHatK(1000, 900, 500);
  double expected_hat = std::exp(std::lgamma(901) - std::lgamma(401) - std::lgamma(1001) + std::lgamma(501));
  CHECK(std::isfinite(at));
  CHECK(at == doctest::Approx(1.0 - (500.0 * 499 * 498) / (1000.0 * 999 * 998)).epsilon(1e-9));
  CHECK(hat == doctest::Approx(expected_hat).epsilon(1e-6));
}

TEST_CASE("report: per task and overall, infra errors excluded and counted") {
  std::vector<Trial> trials = Trials("a", 2, 3, /*infra=*/1);   // n=5 valid, c=2
  auto b = Trials("b", 5, 0);                                  // n=5, c=5
  trials.insert(trials.end(), b.begin(), b.end());
  trials.push_back({"b", "model", Outcome::kCancelled, std::nullopt});
  trials.push_back({"b", "model", Outcome::kAgentTimeout, std::nullopt});  // counts, as a failure: n=6
  auto report = BuildReport(trials, {1, 2});
  REQUIRE(report.ok());
  REQUIRE(report->tasks.size() == 2);
  const auto& a = report->tasks[0];
  CHECK(a.stats.task_id == "a");
  CHECK(a.stats.valid == 5);
  CHECK(a.stats.passed == 2);
  CHECK(a.stats.excluded == 1);
  CHECK(a.stats.outcomes.at("infra_error") == 1);
  CHECK(a.ks[1].pass_at_k == doctest::Approx(0.7));
  CHECK(a.ks[1].pass_hat_k == doctest::Approx(0.1));
  CHECK(a.stats.MeanReward() == doctest::Approx(0.4));
  const auto& bt = report->tasks[1];
  CHECK(bt.stats.valid == 6);
  CHECK(bt.stats.excluded == 1);
  CHECK(bt.ks[0].pass_at_k == doctest::Approx(5.0 / 6.0));
  CHECK(bt.ks[1].pass_hat_k == doctest::Approx(Choose(5, 2) / Choose(6, 2)));
  // Overall: means over tasks; counts summed.
  CHECK(report->overall.valid == 11);
  CHECK(report->overall.excluded == 2);
  CHECK(report->overall_ks[0].pass_at_k == doctest::Approx((0.4 + 5.0 / 6.0) / 2));
  CHECK(report->overall_mean_reward == doctest::Approx((0.4 + 5.0 / 6.0) / 2));
  auto json = forge::verify::ReportToJson(*report);
  CHECK(json["overall"]["pass_at_k"]["2"].get<double>() ==
        doctest::Approx((0.7 + (1 - Choose(1, 2) / Choose(6, 2))) / 2));
  CHECK(forge::verify::ReportToTable(*report).find("pass^2") != std::string::npos);
}

TEST_CASE("report refuses a k larger than a task's valid trials and names the task") {
  std::vector<Trial> trials = Trials("enough", 3, 2);
  auto few = Trials("few-valid", 1, 2, /*infra=*/4);  // 7 trials, only 3 valid
  trials.insert(trials.end(), few.begin(), few.end());
  auto report = BuildReport(trials, {1, 5});
  REQUIRE_FALSE(report.ok());
  CHECK(report.status().kind() == Kind::kInvalidData);
  CHECK(report.status().message().find("few-valid (3 valid)") != std::string::npos);
  CHECK(report.status().message().find("enough") == std::string::npos);
  CHECK(report.status().message().find("k=5") != std::string::npos);
  // k = n is allowed.
  CHECK(BuildReport(trials, {3}).ok());
  CHECK(BuildReport(trials, {0}).status().kind() == Kind::kInvalidArgument);
}

TEST_CASE("TrialFromRecord reads the verdict and names what is missing") {
  using forge::verify::Json;
  auto ok = forge::verify::TrialFromRecord(
      Json::parse(R"({"rollout_id":"r1","task_id":"t","harness":"h","verdict":{"outcome":"failed","reward":0.25}})"));
  REQUIRE(ok.ok());
  CHECK(ok->outcome == Outcome::kFailed);
  CHECK(*ok->reward == 0.25);
  CHECK(forge::verify::TrialFromRecord(Json::parse(R"({"task_id":"t"})")).status().message().find("verdict") !=
        std::string::npos);
  CHECK(forge::verify::TrialFromRecord(Json::parse(R"({"task_id":"t","verdict":{}})")).status().message() ==
        "verdict.outcome: missing");
  CHECK(forge::verify::TrialFromRecord(Json::parse(R"({"verdict":{"outcome":"passed"}})"))
            .status().message().find("task_id") != std::string::npos);
}

TEST_CASE("an outcome this forge does not know is read, and counted as a failed trial with reward 0") {
  using forge::verify::Json;
  auto newer = forge::verify::TrialFromRecord(
      Json::parse(R"({"rollout_id":"r2","task_id":"t","verdict":{"outcome":"quarantined","reward":1,"passed":true}})"));
  REQUIRE(newer.ok());
  CHECK_FALSE(newer->known_outcome);
  CHECK(newer->outcome == Outcome::kFailed);
  CHECK(newer->Name() == "quarantined");
  CHECK(newer->TrustedReward() == 0);
  // t: passed (reward 1) and the newer outcome: n = 2, c = 1; mean reward (1 + 0) / 2.
  std::vector<Trial> trials = Trials("t", 1, 0);
  trials.push_back(*newer);
  auto report = BuildReport(trials, {1, 2});
  REQUIRE(report.ok());
  const auto& t = report->tasks[0].stats;
  CHECK(t.valid == 2);
  CHECK(t.passed == 1);
  CHECK(t.unknown == 1);
  CHECK(t.outcomes.at("quarantined") == 1);
  CHECK(report->tasks[0].ks[0].pass_at_k == 0.5);
  CHECK(report->tasks[0].ks[1].pass_at_k == 1.0);  // k = n = 2: one pass among two
  CHECK(t.MeanReward() == 0.5);
  CHECK(forge::verify::ReportToJson(*report)["overall"]["unknown_outcomes"] == 1);
  CHECK(forge::verify::ReportToTable(*report).find(
            "1 trial(s) with an outcome this forge does not know (quarantined): counted as failed trials, reward 0") !=
        std::string::npos);
}

TEST_CASE("tampered trials are failures with reward 0, in old verdicts (reward 1) and new ones (claimed_reward)") {
  using forge::verify::Json;
  std::vector<Trial> trials;
  for (const char* line :
       {R"({"rollout_id":"r1","task_id":"t","verdict":{"outcome":"passed","reward":1}})",
        R"({"rollout_id":"r2","task_id":"t","verdict":{"outcome":"failed","reward":0.25}})",
        R"({"rollout_id":"r3","task_id":"t","verdict":{"outcome":"tampered","reward":1,"passed":false}})",
        R"({"rollout_id":"r4","task_id":"t","verdict":{"outcome":"tampered","reward":0,"claimed_reward":1}})",
        R"({"rollout_id":"r5","task_id":"t","verdict":{"outcome":"verifier_error","reward":0.9}})"}) {
    auto trial = forge::verify::TrialFromRecord(Json::parse(line));
    REQUIRE(trial.ok());
    trials.push_back(*trial);
  }
  auto report = BuildReport(trials, {1});
  REQUIRE(report.ok());
  const auto& t = report->tasks[0].stats;
  // n = 5, c = 1; mean reward (1 + 0.25 + 0 + 0 + 0) / 5: neither forgery's 1 counts.
  CHECK(t.valid == 5);
  CHECK(t.passed == 1);
  CHECK(t.tampered == 2);
  CHECK(report->tasks[0].ks[0].pass_at_k == doctest::Approx(0.2));
  CHECK(t.MeanReward() == doctest::Approx(0.25));
  CHECK(forge::verify::ReportToTable(*report).find(
            "2 trial(s) tampered with the verifier: counted as failed trials, reward 0") != std::string::npos);
}

TEST_CASE("duplicates folded are the kept verdicts' count, in every report built from them") {
  std::vector<Trial> trials;
  for (const char* id : {"r1", "r2", "r1", "r3", "r2", "r1"}) {
    Trial t{"task", "h", Outcome::kPassed, 1.0};
    t.rollout_id = id;
    t.threshold = std::string(id) == "r3" ? 0.5 : 1.0;
    trials.push_back(t);
  }
  CHECK(forge::verify::FoldByRollout(&trials) == 3);
  REQUIRE(trials.size() == 3);
  CHECK(trials[0].folded == 2);  // r1, read three times
  CHECK(trials[1].folded == 1);
  CHECK(trials[2].folded == 0);
  auto report = BuildReport(trials, {1});
  REQUIRE(report.ok());
  CHECK(report->duplicates_folded == 3);
  CHECK(forge::verify::ReportToJson(*report)["overall"]["duplicates_folded"] == 3);
  CHECK(forge::verify::ThresholdsText(*report) == "0.5 (1), 1 (2)");
}

TEST_CASE("solvable flags broken, trivial, unsolved and saturated tasks") {
  std::vector<Trial> t;
  auto add = [&](std::vector<Trial> more) { t.insert(t.end(), more.begin(), more.end()); };
  add(Trials("broken", 0, 1, 0, "oracle"));
  add(Trials("broken", 0, 1, 0, "nop"));
  add(Trials("broken", 0, 3, 0, "model"));
  add(Trials("trivial", 1, 0, 0, "oracle"));
  add(Trials("trivial", 1, 0, 0, "nop"));
  add(Trials("trivial", 3, 0, 0, "model"));
  add(Trials("good", 1, 0, 0, "oracle"));
  add(Trials("good", 0, 1, 0, "nop"));
  add(Trials("good", 1, 2, 0, "model"));
  forge::verify::SolvableOptions options;
  options.k = 3;
  auto rows = forge::verify::CheckSolvable(t, options);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[0].task_id == "broken");
  CHECK((*rows)[0].flags == std::vector<std::string>{"broken_environment", "unsolved"});
  CHECK((*rows)[1].task_id == "good");
  CHECK((*rows)[1].flags.empty());
  CHECK((*rows)[2].flags == std::vector<std::string>{"trivial", "saturated"});
  CHECK(forge::verify::HasDefect((*rows)[0]));
  CHECK_FALSE(forge::verify::HasDefect((*rows)[1]));
  options.k = 4;
  auto refused = forge::verify::CheckSolvable(t, options);
  CHECK(refused.status().kind() == Kind::kInvalidData);
  CHECK(refused.status().message().find("good (model: 3 valid)") != std::string::npos);
}
