// forge-verify on a sandbox where each exec is an API request (a held pod):
// the whole verification is one forge-box verify stream, and what comes back
// is read from its framed report (sandbox/box_protocol.h).
#include <doctest/doctest.h>

#include <fstream>
#include <optional>

#include "sandbox/box.h"
#include "support/temp_dir.h"
#include "verify/verifiers.h"

using forge::Result;
using forge::Status;
namespace verify_one_stream_test {
using namespace forge::verify;
namespace sandbox = forge::sandbox;

namespace {

std::string Report(int exit, const std::string& out, const std::string& err, const std::optional<std::string>& txt,
                   const std::optional<std::string>& json = std::nullopt, bool timed_out = false) {
  auto size = [](const std::optional<std::string>& s) { return s ? std::to_string(s->size()) : std::string("-1"); };
  return std::string("forge-verify: exit=") + std::to_string(exit) + " timed_out=" + (timed_out ? "1" : "0") +
         " truncated=0 stdout=" + std::to_string(out.size()) + " stderr=" + std::to_string(err.size()) +
         " reward.txt=" + size(txt) + " reward.json=" + size(json) + "\n" + out + err + txt.value_or("") +
         json.value_or("");
}

const char* kSwept = "forge-sweep: stopped 2\nforge-sweep: avail 900000\nforge-sweep: avail 900000\nforge-sweep: done t\n";

// A held pod, as the verifier sees it: every Exec is counted, and answers
// as told.
class PodSandbox : public sandbox::Sandbox {
 public:
  PodSandbox() { handle_ = {"k8s", "ns/pod-1"}; }
  const sandbox::Handle& handle() const override { return handle_; }
  bool ExecsAsAnyUser() const override { return false; }
  bool has_box() const override { return true; }
  bool exec_is_request() const override { return true; }
  Result<sandbox::ExecResult> Exec(const sandbox::ExecRequest& request) override {
    requests.push_back(request);
    if (requests.size() > 1 && stop_answer) return *stop_answer;  // forge-box verify-stop
    if (!status.ok()) return status;
    return answer;
  }
  Status CopyIn(const std::string&, const std::string&) override { return Status::Internal("no copy: one stream"); }
  Result<std::string> ReadFile(const std::string& path, size_t) override {
    return Status::Internal("no read of " + path + ": one stream");
  }
  Status Release() override { return Status::Ok(); }

  std::vector<sandbox::ExecRequest> requests;
  sandbox::ExecResult answer;
  Status status;
  std::optional<sandbox::ExecResult> stop_answer;  // for every exec after the first

 private:
  sandbox::Handle handle_;
};

VerifierSpec Harbor(const forge::testing::TempDir& dir) {
  std::filesystem::create_directories(dir.path() / "tests");
  std::ofstream(dir.File("tests/test.sh")) << "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n";
  VerifierSpec spec;
  spec.kind = forge::tasks::VerifierKind::kHarbor;
  spec.tests_dir = dir.File("tests");
  spec.timeout_sec = 30;
  spec.env = {{"MODE", "strict"}};
  return spec;
}

// What the pod's forge-box verify-stop answers.
sandbox::ExecResult StopAnswer(int exit_code, const std::string& out) {
  sandbox::ExecResult answer;
  answer.exit_code = exit_code;
  answer.stdout_data = out;
  return answer;
}

// The stream's one bounded forge-box verify-stop exec, run even after a stop.
void CheckOneStop(const PodSandbox& pod) {
  REQUIRE(pod.requests.size() == 2);
  CHECK(pod.requests[1].argv == std::vector<std::string>{sandbox::kBoxSandboxPath, "verify-stop", "--wait", "5"});
  CHECK(pod.requests[1].after_stop);
  CHECK(pod.requests[1].timeout_seconds > 0);
  CHECK(pod.requests[1].stdin_heartbeat_seconds == 0);
}

Verdict Answered(PodSandbox& pod, const VerifierSpec& spec, const std::string& out, int exit = 0,
                 const VerifyContext& context = {}) {
  pod.answer.exit_code = exit;
  pod.answer.stdout_data = out;
  return spec.kind == forge::tasks::VerifierKind::kHarbor ? RunHarbor(pod, spec, 1.0, context)
                                                          : RunCommand(pod, spec, 1.0, context);
}

}  // namespace

TEST_CASE("forge-box verify's report: the first status line after the sweep's, and exactly what it counts") {
  std::string before;
  auto r = sandbox::TakeVerifyReport(std::string(kSwept) + Report(0, "ok\nforge-verify: exit=9\n", "e", "1\n"), &before);
  REQUIRE(r);
  CHECK(before == kSwept);
  CHECK(r->exit_code == 0);
  CHECK(r->stdout_data == "ok\nforge-verify: exit=9\n");  // test.sh's own line is its output
  CHECK(r->stderr_data == "e");
  CHECK(r->reward_txt == "1\n");
  CHECK(!r->reward_json);
  CHECK(!sandbox::TakeVerifyReport(std::string(kSwept) + Report(0, "", "", "1") + "x", nullptr));  // bytes past it
  CHECK(!sandbox::TakeVerifyReport("forge-verify: exit=0 stdout=0\n", nullptr));  // fields missing
  CHECK(!sandbox::TakeVerifyReport(kSwept, nullptr));
}

TEST_CASE("one stream: a held pod's verification is one exec of forge-box verify") {
  forge::testing::TempDir dir;
  VerifierSpec spec = Harbor(dir);
  PodSandbox pod;
  VerifyContext context;
  context.baseline = sandbox::Baseline{100, 7, {{1, 10}, {9, 11}}};

  SUBCASE("passed: sweep, tests, test.sh by its shebang and the reward, all in the one request") {
    Verdict v = Answered(pod, spec, kSwept + Report(0, "ran\n", "", "1\n"), 0, context);
    CHECK(v.outcome == Outcome::kPassed);
    CHECK(v.reward == 1.0);
    CHECK(v.log_tail == "ran\n");
    CHECK(v.sweep["stopped"] == 2);
    CHECK(v.sweep["stream"] == "forge-box verify");
    CHECK(v.tamper["checked"] == false);
    REQUIRE(pod.requests.size() == 1);
    const auto& argv = pod.requests[0].argv;
    REQUIRE(argv.size() >= 4);
    CHECK(argv[0] == sandbox::kBoxSandboxPath);
    CHECK(argv[1] == "verify");
    std::string joined;
    for (const auto& a : argv) joined += a + " ";
    CHECK(joined.find("--stop --keep 1:10,9:11 --clear") != std::string::npos);
    CHECK(joined.find("--timeout 30") != std::string::npos);
    CHECK(joined.find("--shebang --reward 65536") != std::string::npos);
    const std::string& input = pod.requests[0].stdin_data;
    CHECK(input.find(std::string("/tests/test.sh") + '\0') != std::string::npos);  // the command
    CHECK(input.find(std::string("MODE=strict") + '\0') != std::string::npos);     // its environment
    CHECK(input.find("tests/test.sh") != std::string::npos);                       // the tests
    CHECK(input.find("echo 1 > /logs/verifier/reward.txt") != std::string::npos);
    CHECK(joined.find("--heartbeat 30") != std::string::npos);  // the client watched (client_watch.h)
    CHECK(pod.requests[0].stdin_heartbeat_seconds == 5);       // and its heartbeat sent
    CHECK(pod.requests[0].env.empty());      // nothing for the backend to wrap in `env`
    CHECK(pod.requests[0].workdir.empty());  // nor in `sh -c cd`
  }
  SUBCASE("reward.json when there is no reward.txt; none at all is the verifier's error") {
    CHECK(Answered(pod, spec, kSwept + Report(0, "", "", std::nullopt, R"({"reward": 0.5})")).reward == 0.5);
    CHECK(Answered(pod, spec, kSwept + Report(3, "", "", std::nullopt)).outcome == Outcome::kVerifierError);
  }
  SUBCASE("a reward past 64 KiB is the agent's state: failed") {
    Verdict v = Answered(pod, spec, kSwept + Report(0, "", "", std::string(kMaxRewardBytes + 1, '1')));
    CHECK(v.outcome == Outcome::kFailed);
    CHECK(v.message.find("larger than") != std::string::npos);
  }
  SUBCASE("test.sh ended by a signal: its reward is not trusted") {
    Verdict v = Answered(pod, spec, kSwept + Report(137, "", "", "1\n"));
    CHECK(v.outcome == Outcome::kFailed);
    CHECK(v.reward == 0.0);
  }
  SUBCASE("test.sh past its deadline") {
    CHECK(Answered(pod, spec, kSwept + Report(137, "", "", std::nullopt, std::nullopt, true)).outcome ==
          Outcome::kVerifierTimeout);
  }
  SUBCASE("the sweep found processes that would not stop: failed, test.sh never ran") {
    Verdict v = Answered(pod, spec, "forge-sweep: left 3\n", 3);
    CHECK(v.outcome == Outcome::kFailed);
    CHECK(v.message.find("3 process(es) of the agent's would not stop") != std::string::npos);
  }
  SUBCASE("the tests could not be unpacked (a full disk): failed") {
    Verdict v = Answered(pod, spec, std::string(kSwept) + "forge-sweep: cannot unpack the tests into /tests: tests/t: No space left on device\n", 4);
    CHECK(v.outcome == Outcome::kFailed);
    CHECK(v.message.find("No space left") != std::string::npos);
  }
  SUBCASE("forge-box refused forge's own input: infra_error") {
    pod.answer.stderr_data = "forge-box: verify: bad tar header checksum\n";
    CHECK(Answered(pod, spec, "", 65).outcome == Outcome::kInfraError);
  }
  SUBCASE("the stream past its deadline: infra_error, and one forge-box verify-stop exec ends it in the pod") {
    pod.answer.timed_out = true;
    pod.stop_answer = StopAnswer(0, "forge-box: verify-stop: stopped 1\n");
    Verdict v = Answered(pod, spec, "", -1);
    CHECK(v.outcome == Outcome::kInfraError);
    CHECK(v.message.find("past its deadline of 150 s; it was stopped in the pod") != std::string::npos);
    CheckOneStop(pod);
  }
  SUBCASE("stopped by a signal: cancelled, and the stop exec's failure said") {
    pod.status = Status::Cancelled("exec in pod pod-1 interrupted");
    pod.stop_answer = StopAnswer(3, "forge-box: verify-stop: left 1 of 1\n");
    Verdict v = Answered(pod, spec, "");
    CHECK(v.outcome == Outcome::kCancelled);
    CHECK(v.message.find("could not stop it in the pod (forge-box verify-stop exit status 3: "
                         "forge-box: verify-stop: left 1 of 1") != std::string::npos);
    CHECK(pod.requests.size() == 2);
  }
  SUBCASE("a stream that failed otherwise (a connection dropped mid-stream): infra_error naming it, and one stop exec") {
    pod.status = Status::Unavailable("exec in pod pod-1: connection ended without an exit status");
    pod.stop_answer = StopAnswer(0, "forge-box: verify-stop: stopped 1\n");
    Verdict v = Answered(pod, spec, "");
    CHECK(v.outcome == Outcome::kInfraError);
    CHECK(v.message.find("run forge-box verify: exec in pod pod-1: connection ended without an exit status; "
                         "it was stopped in the pod") != std::string::npos);
    CheckOneStop(pod);
  }
  SUBCASE("an API error on the stream whose stop exec fails too: both said") {
    pod.status = Status::Protocol("exec: frame with reserved bits set");
    Verdict v = Answered(pod, spec, "");  // no stop_answer: the stop meets the same error
    CHECK(v.outcome == Outcome::kInfraError);
    CHECK(v.message.find("run forge-box verify: exec: frame with reserved bits set; could not stop it in the pod "
                         "(exec: frame with reserved bits set)") != std::string::npos);
    CHECK(pod.requests.size() == 2);
  }
  SUBCASE("forge-box ended the verifier itself (no heartbeat, or a stop signal): infra_error, not test.sh's death") {
    pod.answer.stderr_data = std::string("forge-box: verify: the client sent no heartbeat within its bound: the client is "
                                         "gone, ") + sandbox::kVerifyTreeEnded + "\n";
    Verdict v = Answered(pod, spec, kSwept + Report(137, "", "", "1\n"));
    CHECK(v.outcome == Outcome::kInfraError);
    CHECK(v.message == "forge-box verify: the client sent no heartbeat within its bound: the client is gone, "
                       "the verifier's tree was ended");
    CHECK(!v.reward);  // no reward: the reward.txt it left is not read
    pod.answer.stderr_data = std::string("forge-box: verify: a stop signal came, ") + sandbox::kVerifyTreeEnded + "\n";
    CHECK(Answered(pod, spec, kSwept + Report(137, "", "", std::nullopt)).outcome == Outcome::kInfraError);
    // The verifier's own stderr saying so is inside the report, not forge-box's line.
    pod.answer.stderr_data.clear();
    const std::string forged = std::string("forge-box: verify: x, ") + sandbox::kVerifyTreeEnded + "\n";
    CHECK(Answered(pod, spec, kSwept + Report(0, "", forged, "1\n")).outcome == Outcome::kPassed);
  }
  SUBCASE("a verification that ends by itself sends no stop") {
    Answered(pod, spec, kSwept + Report(0, "", "", "1\n"));
    CHECK(pod.requests.size() == 1);
  }
  SUBCASE("an earlier verification that would not stop: infra_error, not the agent's failure") {
    pod.answer.stderr_data = "forge-box: verify: 1 earlier forge-box verify still running here after SIGKILL\n";
    Verdict v = Answered(pod, spec, "", sandbox::kVerifyBusy);
    CHECK(v.outcome == Outcome::kInfraError);
    CHECK(v.message.find("an earlier verification in k8s sandbox ns/pod-1 would not stop: forge-box: verify: 1 "
                         "earlier") != std::string::npos);
    CHECK(pod.requests.size() == 1);  // the stream ended by itself: no stop exec
  }
  SUBCASE("the API server is unreachable: infra_error, the bounded stop tried once") {
    pod.status = Status::Unavailable("connect to the API server: refused");
    Verdict v = Answered(pod, spec, "");
    CHECK(v.outcome == Outcome::kInfraError);
    CHECK(v.message.find("could not stop it in the pod (connect to the API server: refused)") != std::string::npos);
    CHECK(pod.requests.size() == 2);
  }
  SUBCASE("a verifier user the pod cannot honour: infra_error, nothing sent") {
    spec.user = "1000";
    CHECK(Answered(pod, spec, "").outcome == Outcome::kInfraError);
    CHECK(pod.requests.empty());
  }
}

TEST_CASE("one stream: a command verifier goes the same way, without tests or a reward file") {
  PodSandbox pod;
  VerifierSpec spec;
  spec.kind = forge::tasks::VerifierKind::kCommand;
  spec.command = "test -f /work/out";
  spec.timeout_sec = 5;
  std::string swept = "forge-sweep: stopped 0\nforge-sweep: done t\n";
  CHECK(Answered(pod, spec, swept + Report(0, "", "", std::nullopt)).outcome == Outcome::kPassed);
  REQUIRE(pod.requests.size() == 1);
  std::string joined;
  for (const auto& a : pod.requests[0].argv) joined += a + " ";
  CHECK(joined.find("--clear") == std::string::npos);
  CHECK(joined.find("--reward") == std::string::npos);
  CHECK(pod.requests[0].stdin_data.find(std::string("/bin/sh") + '\0' + "-c" + '\0' + "test -f /work/out") !=
        std::string::npos);
  CHECK(Answered(pod, spec, swept + Report(1, "", "", std::nullopt)).outcome == Outcome::kFailed);
  CHECK(Answered(pod, spec, swept + Report(127, "", "", std::nullopt)).outcome == Outcome::kVerifierError);
}

}  // namespace verify_one_stream_test
