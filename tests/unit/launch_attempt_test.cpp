// forge-launch's attempt builders (launch/attempt.h): the sandbox spec, the
// mounts, the placeholders, the copy plan, the harness's exec and the
// reading of its run, each called without an engine.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "launch/attempt.h"
#include "sandbox/box.h"
#include "launch/healthcheck.h"
#include "launch/network.h"
#include "support/temp_dir.h"
#include "support/fake_env.h"

using forge::Kind;
using forge::records::Json;
// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace launch_attempt_test {
using namespace forge::launch;

namespace {

HarnessProfile Profile() {
  HarnessProfile p;
  p.name = "h";
  p.command = {"{harnesses}/h/bin", "-p", "{instruction}", "--cwd", "{workdir}"};
  p.env = {{"BASE_URL", "{proxy}"}, {"KEY", "{secret}"}, {"MODEL", "{model}"}};
  p.config_files = {{"{workdir}/.h/config.json", R"({"url": "{proxy}", "cwd": "{workdir}"})"}};
  p.default_model = "default-m";
  return p;
}

Attempt MakeAttempt(const LaunchOptions& options, const TaskSpec& task, const HarnessProfile& profile,
                    forge::sandbox::BackendKind backend) {
  return Attempt{options, task, profile, backend, "r-1", 2, "forge-secret", backend == forge::sandbox::BackendKind::kDocker};
}

constexpr auto kDocker = forge::sandbox::BackendKind::kDocker;
constexpr auto kLocal = forge::sandbox::BackendKind::kLocal;

const WriteScratch kNoScratch = [](const std::string&, const std::string&) -> forge::Result<std::string> {
  return forge::Status::Internal("no scratch in this test");
};

}  // namespace

TEST_CASE("attempt spec: the task's limits and env win over the run's; network from the task's allow_internet") {
  forge::testing::FakeEnv env;
  LaunchOptions options;
  options.env = &env;
  options.run_id = "run";
  options.image = "run-image";
  options.proxy = "http://127.0.0.1:9";
  options.hold = true;
  options.hold_seconds = 100;
  options.agent_timeout_seconds = 50;
  TaskSpec task;
  task.id = "t";
  task.memory_bytes = 1 << 30;
  task.agent_timeout_seconds = 30;
  task.allow_internet = false;
  env.SetVar("FORGE_ATTEMPT_TEST_KEY", "from-host");
  task.env = {{"JUDGE", "${FORGE_ATTEMPT_TEST_KEY}"}};
  HarnessProfile profile = Profile();
  auto spec = SandboxSpec(MakeAttempt(options, task, profile, kDocker));
  REQUIRE_MESSAGE(spec.ok(), spec.status().message());
  CHECK(spec->image == "run-image");
  CHECK(spec->limits.memory_bytes == 1 << 30);
  CHECK(spec->limits.cpus == options.cpus);
  CHECK(spec->network == forge::sandbox::NetworkPolicy::kProxyOnly);  // allow_internet = false with a proxy
  CHECK(spec->env.at("JUDGE") == "from-host");
  CHECK(spec->labels.at("forge.attempt") == "2");
  CHECK(spec->lifetime_seconds == 30 + 600 + 100);
  task.env = {{"JUDGE", "${FORGE_ATTEMPT_TEST_UNSET_KEY}"}};
  auto unset = SandboxSpec(MakeAttempt(options, task, profile, kDocker));
  CHECK_FALSE(unset.ok());
  CHECK(unset.status().message().find("FORGE_ATTEMPT_TEST_UNSET_KEY") != std::string::npos);
}

TEST_CASE("attempt mounts: harnesses in docker only; proxy-only's relay at sandbox or host paths") {
  forge::testing::FakeEnv env;
  LaunchOptions options;
  options.env = &env;
  options.proxy = "http://127.0.0.1:9";
  options.network = "proxy-only";
  TaskSpec task;
  task.id = "t";
  HarnessProfile profile = Profile();
  const HostPaths host{"/opt/harnesses", "/usr/bin/forge-relay", "/tmp/relay-dir"};
  forge::sandbox::Spec docker;
  RelayPaths in_docker = AddHostMounts(MakeAttempt(options, task, profile, kDocker), host, docker);
  REQUIRE(docker.mounts.size() == 3);
  CHECK(docker.mounts[0].host_path == "/opt/harnesses");
  CHECK(in_docker.relay == kRelaySandboxPath);
  CHECK(in_docker.socket == std::string(kRelaySocketDir) + "/" + kRelaySocketName);
  forge::sandbox::Spec local;
  RelayPaths on_host = AddHostMounts(MakeAttempt(options, task, profile, kLocal), host, local);
  CHECK(local.mounts.size() == 2);  // no harness mount: the local backend runs on the host's files
  CHECK(on_host.relay == "/usr/bin/forge-relay");
  CHECK(on_host.socket == "/tmp/relay-dir/proxy.sock");
  options.network = "host";
  forge::sandbox::Spec plain;
  CHECK(AddHostMounts(MakeAttempt(options, task, profile, kDocker), host, plain).relay.empty());
  CHECK(plain.mounts.size() == 1);
}

TEST_CASE("attempt plan and exec: placeholders filled, config files at sandbox paths, secret only in env and files") {
  forge::testing::FakeEnv env;
  LaunchOptions options;
  options.env = &env;
  options.proxy = "http://127.0.0.1:9";
  options.run_id = "run";
  TaskSpec task;
  task.id = "t";
  task.instruction = "fix {workdir}";  // the task's own text: never filled
  HarnessProfile profile = Profile();
  const HostPaths host{"/opt/harnesses", "", ""};
  for (const auto backend : {forge::sandbox::BackendKind::kDocker, forge::sandbox::BackendKind::kLocal}) {
    CAPTURE(forge::sandbox::BackendName(backend));
    const Attempt a = MakeAttempt(options, task, profile, backend);
    auto vars = Placeholders(a, host, "/app", "");
    forge::sandbox::OneShot plan;
    REQUIRE(AddCopies(a, "/app", vars, kNoScratch, plan).ok());
    REQUIRE(plan.files.size() == 2);
    CHECK(plan.files[0] == std::pair<std::string, std::string>{"/forge/instruction.md", "fix {workdir}"});
    CHECK(plan.files[1].first == "/app/.h/config.json");  // a sandbox path on either backend
    const std::string root = backend == forge::sandbox::BackendKind::kLocal ? "{root}" : "";
    CHECK(plan.files[1].second == R"({"url": "http://127.0.0.1:9", "cwd": ")" + root + R"(/app"})");
    auto exec = HarnessExec(a, vars, RelayPaths{}, forge::net::Endpoint{}, std::nullopt, std::nullopt);
    REQUIRE(exec.ok());
    // On docker forge-box marks the moment just before the harness itself.
    const size_t at = backend == kDocker ? 3 : 0;
    if (backend == kDocker) {
      CHECK(std::vector<std::string>(exec->argv.begin(), exec->argv.begin() + 3) ==
            std::vector<std::string>{"/forge/bin/forge-box", "mark", "--"});
    }
    CHECK(exec->argv[at] == (backend == kDocker ? options.harness_mount : "/opt/harnesses") + "/h/bin");
    CHECK(exec->argv[at + 2] == "fix {workdir}");
    CHECK(exec->argv[at + 4] == root + "/app");
    CHECK(exec->env.at("KEY") == "forge-secret");
    CHECK(exec->env.at("FORGE_API_KEY") == "forge-secret");
    CHECK(exec->env.at("MODEL") == "default-m");
    CHECK(exec->env.at("FORGE_ATTEMPT") == "2");
    CHECK(exec->timeout_seconds == options.agent_timeout_seconds);
  }
}

TEST_CASE("attempt plan: the oracle's solution, inline or a directory; none is an error naming the task") {
  forge::testing::TempDir dir;
  forge::testing::FakeEnv env;
  LaunchOptions options;
  options.env = &env;
  TaskSpec task;
  task.id = "t";
  HarnessProfile oracle = Profile();
  oracle.solution_dir = "/solution";
  const HostPaths host{"/opt/harnesses", "", ""};
  const Attempt a = MakeAttempt(options, task, oracle, kDocker);
  auto vars = Placeholders(a, host, "/app", "");
  forge::sandbox::OneShot none;
  auto missing = AddCopies(a, "/app", vars, kNoScratch, none);
  CHECK(missing.kind() == Kind::kInvalidData);
  CHECK(missing.message().find("task t has no solution") != std::string::npos);
  task.solution_script = "echo solved";
  std::string written;
  forge::sandbox::OneShot inline_plan;
  REQUIRE(AddCopies(a, "/app", vars, [&](const std::string& name, const std::string& content) {
    written = content;
    return forge::Result<std::string>(dir.File(name));
  }, inline_plan).ok());
  CHECK(written == "echo solved");
  CHECK(inline_plan.copies.back() == std::pair<std::string, std::string>{dir.File("solve.sh"), "/solution"});
  CHECK(vars.at("solution_dir") == "/solution");
}

TEST_CASE("attempt run: wrappers that failed before the harness are infra errors; the harness's own exit is its outcome") {
  forge::testing::FakeEnv env;
  LaunchOptions options;
  options.env = &env;
  options.proxy = "http://127.0.0.1:9";
  options.network = "proxy-only";
  TaskSpec task;
  task.id = "t";
  task.agent_timeout_seconds = 5;
  HarnessProfile profile = Profile();
  const Attempt a = MakeAttempt(options, task, profile, kDocker);
  forge::sandbox::ExecResult relay_failed;
  relay_failed.exit_code = kRelayStartExit;
  relay_failed.stderr_data = "noise\nforge-relay: cannot bind 127.0.0.1:9\nmore";
  Json record;
  forge::Status relay = ReadHarnessRun(a, relay_failed, std::nullopt, "image x", 1, record);
  CHECK(relay.kind() == Kind::kBadConfig);
  CHECK(relay.message().find("forge-relay: cannot bind 127.0.0.1:9") != std::string::npos);
  CHECK(relay.message().find("more") == std::string::npos);
  CHECK_FALSE(record.contains("outcome"));

  forge::sandbox::ExecResult timed_out;
  timed_out.exit_code = 137;
  timed_out.timed_out = true;
  REQUIRE(ReadHarnessRun(a, timed_out, std::nullopt, "image x", 1, record).ok());
  CHECK(record["outcome"] == "agent_timeout");
  CHECK(record["error"] == "harness killed at its 5 s deadline");

  forge::sandbox::ExecResult oom;
  oom.exit_code = 137;
  oom.out_of_memory = true;
  REQUIRE(ReadHarnessRun(a, oom, std::nullopt, "image x", 1024, record).ok());
  CHECK(record["outcome"] == "agent_error");
  CHECK(record["oom"] == true);
  CHECK(record["error"] == "harness killed: out of memory (limit 1024 bytes)");

  forge::sandbox::ExecResult failed;
  failed.exit_code = 3;
  failed.stderr_data = std::string(400, 'x') + "the end";
  Json plain;
  REQUIRE(ReadHarnessRun(a, failed, std::nullopt, "image x", 1, plain).ok());
  CHECK(plain["exit_code"] == 3);
  CHECK(plain["error"].get<std::string>().size() == std::string("harness exited with status 3: ").size() + 300);
  CHECK(plain["error"].get<std::string>().ends_with("the end"));
}

TEST_CASE("attempt run: forge-box's mark line becomes the record's baseline and leaves the harness's stderr") {
  LaunchOptions options;
  TaskSpec task;
  task.id = "t";
  HarnessProfile profile = Profile();
  const Attempt a = MakeAttempt(options, task, profile, kDocker);
  forge::sandbox::ExecResult ran;
  ran.exit_code = 0;
  ran.stderr_data = "Xvfb noise\nforge-mark: t0=1700000000123456789 boot=42 procs=1:10,7:11\nharness says\n"
                    "forge-mark: t0=1 boot=1 procs=\n";  // the harness's own imitation comes later
  Json record;
  REQUIRE(ReadHarnessRun(a, ran, std::nullopt, "image x", 1, record).ok());
  CHECK(record["baseline"] == Json::parse(R"({"t0_ns": 1700000000123456789, "boot_ns": 42,
                                              "processes": [[1, 10], [7, 11]]})"));
  CHECK(record["logs"]["stderr"] == "Xvfb noise\nharness says\nforge-mark: t0=1 boot=1 procs=\n");
  auto back = forge::sandbox::Baseline::FromJson(record["baseline"]);
  REQUIRE(back.ok());
  CHECK(back->KeepList() == "1:10,7:11");

  forge::sandbox::ExecResult unmarked;
  unmarked.stderr_data = "forge-mark: garbage\n";
  Json none;
  REQUIRE(ReadHarnessRun(a, unmarked, std::nullopt, "image x", 1, none).ok());
  CHECK_FALSE(none.contains("baseline"));
  CHECK(forge::sandbox::Baseline::FromJson(Json::parse(R"({"t0_ns": 1, "boot_ns": 2, "processes": [[1]]})"))
            .status().kind() == Kind::kInvalidData);
}

TEST_CASE("readiness: the task's healthcheck, else compose main's, else the image's HEALTHCHECK") {
  TaskSpec task;
  forge::sandbox::ImageConfig image;
  CHECK_FALSE(Readiness(task, image).has_value());  // none given: nothing to wait for
  forge::sandbox::Healthcheck docker;
  docker.test = {"CMD", "wget", "-q", "http://127.0.0.1:8099/it's"};
  docker.interval_seconds = 1;
  docker.retries = 30;
  image.healthcheck = docker;
  auto ready = Readiness(task, image);
  REQUIRE(ready.has_value());
  CHECK(ready->command == "'wget' '-q' 'http://127.0.0.1:8099/it'\\''s'");
  CHECK(ready->interval_sec == 1);
  CHECK(ready->retries == 30);
  auto pod = std::make_shared<forge::sandbox::Pod>();
  pod->main_healthcheck = forge::sandbox::Healthcheck{{"CMD-SHELL", "test -f /ready"}, 2, 5, 0, 3};
  task.pod = pod;
  CHECK(Readiness(task, image)->command == "test -f /ready");
  task.healthcheck = forge::tasks::Healthcheck{"true", 1, 1, 0, 1, 1};
  CHECK(Readiness(task, image)->command == "true");
}

TEST_CASE("a compose pod on docker gets a namespace of its own where host would apply, the proxy through the relay") {
  forge::testing::FakeEnv env;
  LaunchOptions options;
  options.env = &env;
  options.proxy = "http://127.0.0.1:9";
  TaskSpec plain, pod;
  pod.pod = std::make_shared<forge::sandbox::Pod>();
  CHECK(TaskNetwork(options, plain, kDocker) == "host");
  CHECK(TaskNetwork(options, pod, kDocker) == "own");
  // A Kubernetes pod is its own namespace already.
  CHECK(TaskNetwork(options, pod, forge::sandbox::BackendKind::kK8s) == "host");
  CHECK(RelaysProxy("own", options.proxy));
  CHECK_FALSE(RelaysProxy("own", ""));
  CHECK_FALSE(RelaysProxy("host", options.proxy));
  pod.allow_internet = false;
  CHECK(TaskNetwork(options, pod, kDocker) == "proxy-only");
  options.proxy.clear();
  options.network = "host";
  pod.allow_internet.reset();
  CHECK(TaskNetwork(options, pod, kDocker) == "own");
  CHECK(*ParseNetwork("own") == forge::sandbox::NetworkPolicy::kOwn);
  // The spec: a pod on the local backend is refused, naming the task.
  HarnessProfile profile = Profile();
  pod.id = "p";
  auto local = SandboxSpec(MakeAttempt(options, pod, profile, kLocal));
  REQUIRE_FALSE(local.ok());
  CHECK(local.status().message().find("task p has services") == 0);
  auto docker = SandboxSpec(MakeAttempt(options, pod, profile, kDocker));
  REQUIRE(docker.ok());
  CHECK(docker->network == forge::sandbox::NetworkPolicy::kOwn);
}

}  // namespace launch_attempt_test
