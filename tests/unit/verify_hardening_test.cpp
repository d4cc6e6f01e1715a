#include <doctest/doctest.h>

#include <fstream>

#include "sandbox/local/local_backend.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"
#include "verify/fold.h"
#include "verify/hardening.h"
#include "verify/metrics.h"
#include "verify/verifiers.h"

using forge::Kind;
using forge::Result;
using forge::Status;
// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace verify_hardening_test {
using namespace forge::verify;
namespace sandbox = forge::sandbox;

namespace {

// A sandbox of a backend forge-verify has no change list for: the sweep's
// exec answers as told, the rest succeeds unless told otherwise.
class FakeSandbox : public sandbox::Sandbox {
 public:
  FakeSandbox() { handle_ = {"fake", "box-1"}; }
  const sandbox::Handle& handle() const override { return handle_; }
  Result<sandbox::ExecResult> Exec(const sandbox::ExecRequest& request) override {
    const std::string& script = request.argv.back();
    const bool box_sweep = request.argv[0] == sandbox::kBoxSandboxPath && request.argv[1] == "sweep";
    execs.push_back(box_sweep ? Joined(request.argv) : script);
    if (box_sweep || script.find("forge-sweep") != std::string::npos) {
      if (!sweep_status.ok()) return sweep_status;
      sandbox::ExecResult r;
      r.exit_code = sweep_exit;
      // Echo the end line with the sweep's own tag, as the real one would.
      std::string tag = box_sweep ? request.argv[3] : script.substr(script.find("forge-sweep: done ") + 18);
      tag = tag.substr(0, tag.find('"'));
      r.stdout_data = sweep_output + (sweep_finishes ? "forge-sweep: done " + tag + "\n" : "");
      return r;
    }
    if (!test_status.ok()) return test_status;
    sandbox::ExecResult r;
    r.exit_code = test_exit;
    return r;
  }
  bool has_box() const override { return box; }
  static std::string Joined(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
    return out;
  }
  Status CopyIn(const std::string&, const std::string&) override { return copy_status; }
  Result<std::string> ReadFile(const std::string& path, size_t) override {
    if (path == "/logs/verifier/reward.txt") return std::string("1\n");
    return Status::NotFound(path);
  }
  Status Release() override { return Status::Ok(); }

  std::vector<std::string> execs;
  std::string sweep_output = "forge-sweep: stopped 0\nforge-sweep: avail 900000\n";
  int sweep_exit = 0;
  bool sweep_finishes = true;
  Status sweep_status;
  Status copy_status;
  Status test_status;
  int test_exit = 0;
  bool box = false;

 private:
  sandbox::Handle handle_;
};

VerifierSpec HarborSpec(const forge::testing::TempDir& dir) {
  std::filesystem::create_directories(dir.path() / "tests");
  std::ofstream(dir.File("tests/test.sh")) << "#!/bin/sh\n. $HOME/.profile\npython3 /tests/t.py\n";
  VerifierSpec spec;
  spec.kind = forge::tasks::VerifierKind::kHarbor;
  spec.tests_dir = dir.File("tests");
  spec.timeout_sec = 10;
  return spec;
}

}  // namespace

TEST_CASE("forge-box runs the sweep: no program of the sandbox's, the environment's processes kept") {
  // Where forge-box is mounted, the sweep is its argv: nothing found on the
  // sandbox's PATH, not even its /bin/sh.
  CHECK(SweepArgv(true, true, "t1", std::nullopt) ==
        std::vector<std::string>{"/forge/bin/forge-box", "sweep", "--tag", "t1", "--stop", "--clear"});
  forge::sandbox::Baseline baseline;
  baseline.processes = {{1, 10}, {7, 11}};
  CHECK(SweepArgv(true, false, "t2", baseline) ==
        std::vector<std::string>{"/forge/bin/forge-box", "sweep", "--tag", "t2", "--stop", "--keep", "1:10,7:11"});
  CHECK(SweepArgv(false, true, "t3", baseline) ==
        std::vector<std::string>{"/forge/bin/forge-box", "sweep", "--tag", "t3", "--clear"});
}

TEST_CASE("the sweep's output: fit, a fault the agent caused, a full disk, a shell that did not run it") {
  SweepReport ok = ParseSweepOutput("forge-sweep: stopped 3\nforge-sweep: avail 5000\nforge-sweep: avail 2048\n"
                                    "forge-sweep: done ab\n", 0);
  CHECK(ok.fault.empty());
  CHECK(ok.stopped == 3);
  CHECK(ok.min_avail_kib == 2048);
  SweepReport blocked = ParseSweepOutput("forge-sweep: cannot clear /tests: mv: Operation not permitted\n", 4);
  CHECK(blocked.fault == "cannot clear /tests: mv: Operation not permitted");
  SweepReport stuck = ParseSweepOutput("forge-sweep: left 2\n", 3);
  CHECK(stuck.left == 2);
  CHECK(stuck.fault == "2 process(es) of the agent's would not stop");
  SweepReport full = ParseSweepOutput("forge-sweep: avail 12\nforge-sweep: done ab\n", 0);
  CHECK(full.fault.find("12 KiB free") != std::string::npos);
  SweepReport broken = ParseSweepOutput("", 127);
  CHECK(broken.fault.find("forge's sweep did not finish (exit status 127, no end line)") != std::string::npos);
  // A fake shell that exits 0 without running anything has no end line.
  CHECK(!ParseSweepOutput("ok\n", 0).fault.empty());
  // The script itself stops processes with builtins and moves by rename.
  std::string script = SweepScript(true, true, "tag1");
  CHECK(script.find("kill -KILL -1") != std::string::npos);
  CHECK(script.find("aside /tests /.forge-old-tests-tag1") != std::string::npos);
  CHECK(SweepScript(false, false, "t").find("kill") == std::string::npos);
}

TEST_CASE("attribution: a step that fails in a sandbox that answers is the agent's") {
  FakeSandbox box;
  CHECK(AgentCause(box, Status::Unavailable("engine down")).empty());
  CHECK(AgentCause(box, Status::NotFound("pod gone")).empty());
  CHECK(!AgentCause(box, Status::IoError("no space left on device")).empty());
  // forge's own backend refusing its request is never the agent's (#55: the
  // k8s backend refused the sweep's exec as root).
  CHECK(AgentCause(box, Status::InvalidArgument("exec: the k8s backend runs commands as the pod's user")).empty());
  CHECK(AgentCause(box, Status::BadConfig("no relay")).empty());
  CHECK(AgentCause(box, Status::Internal("bug")).empty());
  // A lost sandbox of a backend without an engine to ask is the infrastructure's.
  forge::testing::FakeEnv env;
  forge::sandbox::local::LocalBackend local(env, "/nonexistent/forge-local");
  CHECK(AgentCauseOfLostSandbox(local, {"fake", "x"}, Status::Unavailable("gone")).empty());
}

TEST_CASE("RunHarbor: a sandbox the agent left unfit is failed, never infra_error") {
  forge::testing::TempDir dir;
  VerifierSpec spec = HarborSpec(dir);

  SUBCASE("fit: the verifier runs; the unchecked backend says so") {
    FakeSandbox box;
    Verdict v = RunHarbor(box, spec, 1.0);
    CHECK(v.outcome == Outcome::kPassed);
    CHECK(v.sweep["stopped"] == 0);
    CHECK(v.tamper["checked"] == false);
    CHECK(box.execs.size() == 3);  // stop, clear, test.sh
  }
  SUBCASE("the sweep cannot clear /tests") {
    FakeSandbox box;
    box.sweep_output = "forge-sweep: cannot clear /tests: Operation not permitted\n";
    box.sweep_exit = 4;
    box.sweep_finishes = false;
    Verdict v = RunHarbor(box, spec, 1.0);
    CHECK(v.outcome == Outcome::kFailed);
    CHECK(v.reward == 0.0);
    CHECK(v.message.find("cannot clear /tests") != std::string::npos);
  }
  SUBCASE("the shell is broken") {
    FakeSandbox box;
    box.sweep_output = "";
    box.sweep_exit = 127;
    box.sweep_finishes = false;
    CHECK(RunHarbor(box, spec, 1.0).outcome == Outcome::kFailed);
  }
  SUBCASE("the upload fails on a full disk") {
    FakeSandbox box;
    box.copy_status = Status::IoError("no space left on device");
    Verdict v = RunHarbor(box, spec, 1.0);
    CHECK(v.outcome == Outcome::kFailed);
    CHECK(v.message.find("upload tests") != std::string::npos);
  }
  SUBCASE("the engine is unreachable: infra_error") {
    FakeSandbox box;
    box.copy_status = Status::Unavailable("Docker engine: connect failed");
    CHECK(RunHarbor(box, spec, 1.0).outcome == Outcome::kInfraError);
    FakeSandbox box2;
    box2.sweep_status = Status::Unavailable("Docker engine: connect failed");
    CHECK(RunHarbor(box2, spec, 1.0).outcome == Outcome::kInfraError);
  }
  SUBCASE("evidence from an earlier verification stands and outranks a pass; the claim gets no reward") {
    FakeSandbox box;
    Json earlier = {{"checked", true},
                    {"method", "fanotify"},
                    {"findings", Json::array({{{"path", "/bin/sh"}, {"why", "executed /bin/sh, which the agent wrote"}}})}};
    VerifyContext context;
    context.previous_tamper = &earlier;
    Verdict v = RunHarbor(box, spec, 1.0, context);
    CHECK(v.outcome == Outcome::kTampered);
    CHECK(v.message.find("an earlier verification") != std::string::npos);
    const Json j = v.ToJson();
    CHECK(j["passed"] == false);
    CHECK(j["reward"] == 0.0);
    CHECK(j["claimed_reward"] == 1.0);  // what the verifier said, kept for inspection only
    CHECK(v.TrustedReward() == 0.0);
  }
  SUBCASE("a test.sh a signal ended: its reward is not trusted") {
    FakeSandbox box;
    box.test_exit = 137;  // reward.txt says 1
    Verdict v = RunHarbor(box, spec, 1.0);
    CHECK(v.outcome == Outcome::kFailed);
    CHECK(v.reward == 0.0);
    CHECK(v.message.find("ended by signal 9") != std::string::npos);
  }
  SUBCASE("with forge-box the sweep is its own program, keeping the environment's processes") {
    FakeSandbox box;
    box.box = true;
    VerifyContext context;
    context.baseline = sandbox::Baseline{100, 7, {{1, 10}, {9, 11}}};
    Verdict v = RunHarbor(box, spec, 1.0, context);
    CHECK(v.outcome == Outcome::kPassed);
    REQUIRE(box.execs.size() == 3);
    CHECK(box.execs[0].starts_with("/forge/bin/forge-box sweep --tag "));
    CHECK(box.execs[0].ends_with(" --stop --keep 1:10,9:11"));
    CHECK(box.execs[1].ends_with(" --clear"));
  }
  SUBCASE("keep_processes leaves the agent's processes") {
    FakeSandbox box;
    spec.keep_processes = true;
    Verdict v = RunHarbor(box, spec, 1.0);
    CHECK(v.outcome == Outcome::kPassed);
    CHECK(v.sweep["kept_processes"] == true);
    CHECK(box.execs.size() == 2);
    CHECK(box.execs[0].find("kill -KILL") == std::string::npos);
  }
}

TEST_CASE("tampered counts as a failed trial and is counted apart") {
  CHECK(CountsAsTrial(Outcome::kTampered));
  CHECK(ParseOutcome("tampered") == Outcome::kTampered);
  std::vector<Trial> trials = {{"a", "m", Outcome::kPassed, 1.0, "r1"},
                               {"a", "m", Outcome::kTampered, 1.0, "r2"},
                               {"a", "m", Outcome::kInfraError, std::nullopt, "r3"}};
  auto report = BuildReport(trials, {1});
  REQUIRE(report.ok());
  CHECK(report->tasks[0].stats.valid == 2);
  CHECK(report->tasks[0].stats.passed == 1);
  CHECK(report->tasks[0].stats.tampered == 1);
  CHECK(report->overall.tampered == 1);
  CHECK(ReportToJson(*report)["overall"]["tampered"] == 1);
  CHECK(ReportToTable(*report).find("1 trial(s) tampered") != std::string::npos);
}

TEST_CASE("the last verdict of each rollout counts; rollouts without an id are all kept") {
  std::vector<Trial> trials = {{"a", "m", Outcome::kFailed, 0.0, "r1"},
                               {"a", "m", Outcome::kPassed, 1.0, "r2"},
                               {"a", "m", Outcome::kPassed, 1.0, ""},
                               {"a", "m", Outcome::kPassed, 1.0, "r1"},
                               {"a", "m", Outcome::kPassed, 1.0, ""},
                               {"a", "m", Outcome::kFailed, 0.0, "r2"}};
  std::vector<Json> records;
  for (size_t i = 0; i < trials.size(); ++i) records.push_back(Json{{"line", i}});
  CHECK(FoldByRollout(&trials, &records) == 2);
  REQUIRE(trials.size() == 4);
  CHECK(trials[0].rollout_id == "r1");
  CHECK(trials[0].outcome == Outcome::kPassed);  // the later verdict
  CHECK(trials[1].outcome == Outcome::kFailed);  // r2's later verdict
  CHECK(records[0]["line"] == 3);
  CHECK(records[1]["line"] == 5);
  CHECK(records[3]["line"] == 4);
  // Read twice, the same verdicts give the same report.
  std::vector<Trial> twice = trials;
  twice.insert(twice.end(), trials.begin(), trials.end());
  CHECK(FoldByRollout(&twice) == 2);  // the two with an id; those without cannot be told apart
}

TEST_CASE("verifier.keep_processes is read, kept, and checked") {
  Json task = {{"id", "t"}, {"verifier", {{"kind", "command"}, {"command", "true"}, {"keep_processes", true}}}};
  auto spec = VerifierSpecFromTask(task, forge::testing::FakeEnv());
  REQUIRE(spec.ok());
  CHECK(spec->keep_processes);
  task["verifier"]["keep_processes"] = "yes";
  auto bad = VerifierSpecFromTask(task, forge::testing::FakeEnv());
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("verifier.keep_processes") != std::string::npos);
}

}  // namespace verify_hardening_test
