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

std::vector<std::string> Paths(const Json& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes) out.push_back(c["path"].get<std::string>());
  return out;
}

// A sandbox of a backend forge-verify has no change list for: the sweep's
// exec answers as told, the rest succeeds unless told otherwise.
class FakeSandbox : public sandbox::Sandbox {
 public:
  FakeSandbox() { handle_ = {"fake", "box-1"}; }
  const sandbox::Handle& handle() const override { return handle_; }
  Result<sandbox::ExecResult> Exec(const sandbox::ExecRequest& request) override {
    const std::string& script = request.argv.back();
    execs.push_back(script);
    if (script.find("forge-sweep") != std::string::npos) {
      if (!sweep_status.ok()) return sweep_status;
      sandbox::ExecResult r;
      r.exit_code = sweep_exit;
      // Echo the end line with the script's own tag, as a real shell would.
      size_t at = script.find("forge-sweep: done ");
      std::string tag = script.substr(at + 18, script.find('"', at) - at - 18);
      r.stdout_data = sweep_output + (sweep_finishes ? "forge-sweep: done " + tag + "\n" : "");
      return r;
    }
    if (!test_status.ok()) return test_status;
    sandbox::ExecResult r;
    r.exit_code = 0;
    return r;
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

TEST_CASE("the toolchain of a test script: shells, command words, sourced files") {
  Toolchain t = ToolchainOfScript(
      "#!/bin/bash\nsource $HOME/.local/bin/env\n. /etc/profile\n"
      "uvx -p 3.13 pytest /tests/test_outputs.py && /usr/bin/python3 -c 'print(1)' | tee x\n");
  for (const char* name : {"sh", "bash", "env", "uvx", "pytest", "python3", "tee"}) {
    CHECK_MESSAGE(t.commands.count(name) == 1, name);
  }
  CHECK(t.commands.count("-p") == 0);
  CHECK(t.sourced == std::set<std::string>{"/root/.local/bin/env", "/etc/profile"});
}

TEST_CASE("changes that touch the toolchain are named; an honest agent's are not") {
  Toolchain t = ToolchainOfScript("#!/bin/sh\n. ~/.profile\npytest /tests\npython3 x.py\n");
  std::vector<FileChange> changes = {
      {"/work/answer.txt", 1},           // the agent's work
      {"/usr/local/bin/pytest", 1},      // pip install pytest on an image without it
      {"/usr/local/lib/python3.11/site-packages/numpy", 1},
      {"/root/.cache", 1},
      {"/usr/bin/python3", 0},           // replaced
      {"/usr/local/bin/cat", 1},         // not named by the script
      {"/root/.profile", 0},             // sourced
      {"/etc/ld.so.preload", 1},
      {"/tests/d", 1},
      {"/logs/verifier/reward.txt", 1},
      {"/logs/agent/trace.txt", 1},      // the harness's own logs
      {"/usr/lib/python3/sitecustomize.py", 1},
      {"/conftest.py", 1},
      {"/lib/x86_64-linux-gnu/libc.so.6", 0},
      {"/lib/x86_64-linux-gnu/libfoo.so.1", 0},
      {"/usr/local/bin/sh", 1},          // shadows /bin/sh
  };
  auto image_has = [](const std::string& name, const std::string& dir) {
    return (name == "sh" && dir != "/bin") || (name == "python3" && dir != "/usr/bin");
  };
  Json found = ToolchainChanges(changes, t, image_has);
  CHECK(Paths(found) == std::vector<std::string>{"/usr/bin/python3", "/root/.profile", "/etc/ld.so.preload",
                                                 "/tests/d", "/logs/verifier/reward.txt",
                                                 "/usr/lib/python3/sitecustomize.py", "/conftest.py",
                                                 "/lib/x86_64-linux-gnu/libc.so.6", "/usr/local/bin/sh"});
  CHECK(found[0]["kind"] == "modified");
  CHECK(found[8]["why"] == "a shell every verifier starts through");
  CHECK(ToolchainChanges({{"/usr/bin/python3.11", 1}, {"/usr/local/bin/python3", 1}}, t, image_has)[0]["why"] ==
        "a command the verifier runs, shadowed by an added one");
  // Without the image's own pytest, the added one shadows nothing.
  CHECK(ToolchainChanges({{"/usr/local/bin/pytest", 1}}, t, image_has).empty());
  CHECK(ToolchainChanges({{"/usr/local/bin/pytest", 1}}, t, [](auto&, auto&) { return true; }).size() == 1);
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
  CHECK(broken.fault.find("did not run forge's sweep (exit status 127, no end line)") != std::string::npos);
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
  SUBCASE("evidence from an earlier verification stands and outranks a pass") {
    FakeSandbox box;
    Json earlier = {{"checked", true},
                    {"method", "docker changes"},
                    {"toolchain", Json::array({{{"path", "/bin/sh"}, {"kind", "modified"}, {"why", "x"}}})}};
    Verdict v = RunHarbor(box, spec, 1.0, nullptr, &earlier);
    CHECK(v.outcome == Outcome::kTampered);
    CHECK(v.reward == 1.0);  // what the verifier said, kept for inspection
    CHECK(v.message.find("/bin/sh modified") != std::string::npos);
    CHECK(v.ToJson()["passed"] == false);
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
