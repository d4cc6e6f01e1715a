// Pod-native rollouts' pure parts: the supervisor's status line and output
// as forge-launch reads them (a termination message, a log with the
// harness's own lines before it), the pod's shape (init container, emptyDirs,
// the supervisor's command, a held pod's readiness probe), the setup archive
// (files, command, environment, the start file last), and the watch's view
// of a terminated main container.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "sandbox/box.h"
#include "sandbox/box_protocol.h"
#include "sandbox/k8s/pod_spec.h"
#include "sandbox/k8s/pod_watcher.h"
#include "sandbox/k8s/supervised.h"

namespace sandbox = forge::sandbox;
namespace k8s = forge::sandbox::k8s;
using Json = nlohmann::json;

namespace {

// The (name, content) of each entry of a plain ustar archive.
std::vector<std::pair<std::string, std::string>> Entries(const std::string& archive) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t at = 0; at + 512 <= archive.size() && archive[at] != '\0';) {
    const std::string name = archive.substr(at, 100).c_str();
    const size_t size = std::stoul(archive.substr(at + 124, 12).c_str(), nullptr, 8);
    out.emplace_back(name, archive.substr(at + 512, size));
    at += 512 + (size + 511) / 512 * 512;
  }
  return out;
}

}  // namespace

TEST_CASE("supervise: the status line parses; anything else does not") {
  auto r = sandbox::ParseSuperviseLine("forge-supervise: exit=3 timed_out=1 truncated=0 stdout=5 stderr=7\n");
  REQUIRE(r);
  CHECK(r->exit_code == 3);
  CHECK(r->timed_out);
  CHECK_FALSE(r->truncated);
  CHECK(r->stdout_bytes == 5);
  CHECK(r->stderr_bytes == 7);
  CHECK_FALSE(sandbox::ParseSuperviseLine("forge-supervise: exit=3"));              // fields missing
  CHECK_FALSE(sandbox::ParseSuperviseLine("forge-supervise: exit=x timed_out=0 truncated=0 stdout=0 stderr=0"));
  CHECK_FALSE(sandbox::ParseSuperviseLine("it failed on purpose"));
  CHECK_FALSE(sandbox::ParseSuperviseLine(""));
}

TEST_CASE("supervise: the output is what follows the last line whose sizes match, to the end") {
  std::string out, err;
  // The harness printed a fake status line of its own earlier (in the log
  // only the supervisor writes, but a forged one must not pass anyway).
  const std::string log =
      "forge-supervise: exit=0 timed_out=0 truncated=0 stdout=3 stderr=0\nhi\n"
      "forge-supervise: exit=4 timed_out=0 truncated=0 stdout=6 stderr=4\nhello\noops";
  auto r = sandbox::TakeSuperviseOutput(log, &out, &err);
  REQUIRE(r);
  CHECK(r->exit_code == 4);
  CHECK(out == "hello\n");
  CHECK(err == "oops");
  // Sizes that do not reach the end (a cut log): no status.
  CHECK_FALSE(sandbox::TakeSuperviseOutput("forge-supervise: exit=0 timed_out=0 truncated=0 stdout=9 stderr=0\nab",
                                           &out, &err));
  CHECK_FALSE(sandbox::TakeSuperviseOutput("just the harness's lines\n", &out, &err));
}

TEST_CASE("supervised pod: forge-box from an init container, read-only; the supervisor is the command") {
  sandbox::Spec spec;
  spec.run_id = "run-1";
  spec.rollout_id = "r-1";
  spec.image = "task:1";
  spec.user = "1000";
  k8s::K8sOptions options;
  k8s::Supervision held{"forge-box:abc", 90, 4096, 3600, 300};
  auto pod = k8s::BuildPod(spec, options, "ns", &held);
  REQUIRE(pod.ok());
  const Json& ps = (*pod)["spec"];
  REQUIRE(ps["initContainers"].size() == 1);
  const Json& init = ps["initContainers"][0];
  CHECK(init["image"] == "forge-box:abc");
  CHECK(init["command"] == Json({"/forge-box", "install", sandbox::kBoxSandboxPath}));
  CHECK(init["securityContext"]["runAsUser"] == 1000);
  CHECK(init["resources"] == ps["containers"][0]["resources"]);
  CHECK(ps["volumes"].size() == 2);
  const Json& main = ps["containers"][0];
  CHECK(main["command"][0] == sandbox::kBoxSandboxPath);
  CHECK(main["command"][1] == "supervise");
  CHECK_FALSE(main.contains("args"));
  CHECK(main["terminationMessagePolicy"] == "File");
  bool read_only_bin = false;
  for (const Json& m : main["volumeMounts"]) {
    if (m["mountPath"] == sandbox::kBoxDir) read_only_bin = m.value("readOnly", false);
  }
  CHECK(read_only_bin);
  CHECK(main["readinessProbe"]["exec"]["command"] == Json({sandbox::kBoxSandboxPath, "done"}));
  const std::string command = main["command"].dump();
  CHECK(command.find("\"--hold\",\"3600\"") != std::string::npos);
  CHECK(command.find("\"--timeout\",\"90\"") != std::string::npos);
  CHECK(k8s::IsSupervised(*pod));

  k8s::Supervision once{"forge-box:abc", 0, 4096, 0, 300};
  auto plain = k8s::BuildPod(spec, options, "ns", &once);
  REQUIRE(plain.ok());
  CHECK_FALSE((*plain)["spec"]["containers"][0].contains("readinessProbe"));
  CHECK((*plain)["spec"]["containers"][0]["command"].dump().find("--hold") == std::string::npos);
  auto exec_pod = k8s::BuildPod(spec, options, "ns");
  REQUIRE(exec_pod.ok());
  CHECK_FALSE(k8s::IsSupervised(*exec_pod));
}

TEST_CASE("supervised pod: the setup archive carries files, command, environment, the start file last") {
  sandbox::OneShot job;
  job.files = {{"/forge/instruction.md", "do it"}};
  job.exec.argv = {"sh", "-c", "echo hi"};
  job.exec.env = {{"FORGE_API_KEY", "forge-secret"}};
  auto archive = k8s::SetupArchive(job);
  REQUIRE(archive.ok());
  auto entries = Entries(*archive);
  REQUIRE(entries.size() == 4);
  CHECK(entries[0] == std::make_pair(std::string("forge/instruction.md"), std::string("do it")));
  CHECK(entries[1].first == "forge/run/env");
  CHECK(entries[1].second == std::string("FORGE_API_KEY=forge-secret\0", 27));
  CHECK(entries[2].first == "forge/run/argv");
  CHECK(entries[2].second == std::string("sh\0-c\0echo hi\0", 14));
  CHECK(entries.back().first == "forge/run/go");
}

TEST_CASE("watch: a terminated main container's exit code and message; readiness") {
  Json pod = Json::parse(R"({"metadata":{"name":"p"},"status":{"phase":"Failed","containerStatuses":[
    {"name":"main","ready":false,"state":{"terminated":{"exitCode":3,"reason":"Error",
     "message":"forge-supervise: exit=3 timed_out=0 truncated=0 stdout=0 stderr=0\n"}}}]}})");
  auto view = k8s::ClassifyPod(pod, "main");
  CHECK(view.state == k8s::PodView::kEnded);
  CHECK(view.terminated);
  CHECK(view.exit_code == 3);
  CHECK(sandbox::ParseSuperviseLine(view.message));
  Json ready = Json::parse(R"({"metadata":{"name":"p"},"status":{"phase":"Running","containerStatuses":[
    {"name":"main","ready":true,"state":{"running":{}}}]}})");
  auto held = k8s::ClassifyPod(ready, "main");
  CHECK(held.state == k8s::PodView::kRunning);
  CHECK(held.ready);
  CHECK_FALSE(held.terminated);
}
