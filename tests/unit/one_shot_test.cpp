// The one-shot sandbox: the script a sandbox's own process runs (checked
// with the real /bin/sh), and DockerBackend::RunOnce against the real
// engine: files, env and the secret arrive, output and exit status come back,
// the secret never reaches the container's configuration, the deadline and
// cancel end it, an OOM kill is classified, and no container is left.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/hash.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/engine.h"
#include "sandbox/docker/raw_call.h"
#include "sandbox/one_shot_script.h"
#include "support/temp_dir.h"
#include "forge_paths.h"
#include "support/fake_env.h"
#include "support/skip.h"

using forge::Kind;
using forge::sandbox::OneShot;

namespace {

// Runs `sh -c <bootstrap>` with the script on stdin; returns the exit status.
int RunWithSh(const std::string& script, const std::string& out_file) {
  forge::testing::TempDir dir;
  std::string script_file = dir.File("script");
  std::ofstream(script_file, std::ios::binary) << script;
  std::string command = "/bin/sh -c " + forge::sandbox::ShellQuote(forge::sandbox::OneShotBootstrap()) +
                        " < " + script_file + " > " + out_file + " 2>&1";
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int CountContainers(const std::string& run_id) {
  std::string command = "docker ps -aq --filter label=forge.run=" + run_id + " | wc -l";
  FILE* pipe = popen(command.c_str(), "r");
  int n = -1;
  if (pipe) {
    if (std::fscanf(pipe, "%d", &n) != 1) n = -1;
    pclose(pipe);
  }
  return n;
}

// A small busybox sandbox's spec; its run id starts with prefix.
forge::sandbox::Spec BusyboxSpec(const std::string& prefix, int64_t memory_bytes) {
  forge::sandbox::Spec spec;
  spec.run_id = prefix + forge::RandomHex(4);
  spec.image = "forge-busybox:latest";
  spec.limits.memory_bytes = memory_bytes;
  spec.limits.cpus = 1;
  spec.lifetime_seconds = 300;
  return spec;
}

std::string DockerInspect(const std::string& container) {
  std::string out;
  FILE* pipe = popen(("docker inspect " + container + " 2>&1").c_str(), "r");
  char buffer[4096];
  size_t n;
  while (pipe && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  if (pipe) pclose(pipe);
  return out;
}

// A harness that outlives its deadline, and leaves a process behind.
OneShot RunawayJob() {
  OneShot job;
  job.exec.argv = {"/bin/sh", "-c", "echo before; (sleep 1000 &); sleep 1000"};
  job.exec.timeout_seconds = 2;
  return job;
}

// A harness that grows until the memory limit kills it.
OneShot MemoryHogJob() {
  OneShot job;
  job.exec.argv = {"/bin/sh", "-c", "x=aaaaaaaaaaaaaaaa; while true; do x=\"$x$x\"; done"};
  job.exec.timeout_seconds = 60;
  return job;
}

// RunOnce of a harness that sleeps, cancelled after a second.
forge::Result<forge::sandbox::ExecResult> RunCancelled(forge::sandbox::docker::DockerBackend& backend,
                                                        const forge::sandbox::Spec& spec,
                                                        std::unique_ptr<forge::sandbox::Sandbox>* hold) {
  forge::StopToken cancel;
  OneShot job;
  job.exec.argv = {"/bin/sh", "-c", "sleep 1000"};
  job.exec.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    cancel.Request();
  });
  auto ran = backend.RunOnce(spec, job, hold);
  stopper.join();
  return ran;
}

// A job whose instruction file a non-root user may not write.
OneShot UnwritableJob() {
  OneShot job;
  job.files = {{"/forge/instruction.md", "x"}};
  job.exec.argv = {"/bin/sh", "-c", "echo ran"};
  return job;
}

}  // namespace

TEST_CASE("shell quoting survives quotes, newlines, $ and backslashes") {
  forge::testing::TempDir dir;
  const std::string tricky = "it's \"q\" $HOME `x` \\ \n\tend";
  std::string command = "printf %s " + forge::sandbox::ShellQuote(tricky) + " > " + dir.File("o");
  REQUIRE(std::system(command.c_str()) == 0);
  CHECK(forge::testing::ReadFile(dir.File("o")) == tricky);
}

TEST_CASE("one-shot script: files exact, env exported, workdir entered, exit status kept") {
  forge::testing::TempDir dir;
  OneShot job;
  const std::string content = "line 'one'\nline \"two\" $NOT_EXPANDED\nno newline at end";
  job.files = {{dir.File("deep/a/b.txt"), content}, {dir.File("empty"), ""}};
  job.exec.env = {{"FORGE_X", "it's x"}, {"OTHER", "two words"}};
  job.exec.argv = {"/bin/sh", "-c", "pwd; echo \"$FORGE_X|$OTHER\"; read -r l || echo stdin-empty; exit 7"};
  auto script = forge::sandbox::OneShotScript(job, dir.File("wd"), 60);
  int status = RunWithSh(script, dir.File("out"));
  CHECK(status == 7);
  CHECK(forge::testing::ReadFile(dir.File("deep/a/b.txt")) == content);
  CHECK(std::filesystem::exists(dir.File("empty")));
  CHECK(forge::testing::ReadFile(dir.File("out")) == dir.File("wd") + "\nit's x|two words\nstdin-empty\n");
}

TEST_CASE("one-shot script: an unwritable file stops it before the harness, with its marker") {
  forge::testing::TempDir dir;
  std::ofstream(dir.File("plain")) << "x";
  OneShot job;
  job.files = {{dir.File("plain/sub/file"), "x"}};  // a file where a directory must be
  job.exec.argv = {"/bin/sh", "-c", "echo ran"};
  int status = RunWithSh(forge::sandbox::OneShotScript(job, "", 60), dir.File("out"));
  CHECK(status == forge::sandbox::kOneShotSetupExit);
  std::string out = forge::testing::ReadFile(dir.File("out"));
  CHECK(out.find("forge-setup: cannot write " + dir.File("plain/sub/file")) != std::string::npos);
  CHECK(out.find("ran") == std::string::npos);
}

TEST_CASE("one-shot script: its own lifetime ends a harness that outlives it") {
  forge::testing::TempDir dir;
  OneShot job;
  job.exec.argv = {"/bin/sh", "-c", "sleep 30"};
  auto start = std::chrono::steady_clock::now();
  int status = RunWithSh(forge::sandbox::OneShotScript(job, "", 1), dir.File("out"));
  CHECK(status == 137);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("one-shot script: a script cut short runs nothing") {
  forge::testing::TempDir dir;
  OneShot job;
  job.exec.argv = {"/bin/sh", "-c", "echo ran"};
  std::string script = forge::sandbox::OneShotScript(job, "", 60);
  int status = RunWithSh(script.substr(0, script.find("echo ran") + 8), dir.File("out"));
  CHECK(status == 198);
  CHECK(forge::testing::ReadFile(dir.File("out")).find("ran\n") == std::string::npos);
}

TEST_CASE("one-shot script with forge-box: nothing the agent could replace runs once the command started") {
  OneShot job;
  job.exec.argv = {"/bin/sh", "-c", "echo ran"};
  job.exec.timeout_seconds = 30;
  const std::string script = forge::sandbox::OneShotScript(job, "", 60, "mk-1", /*box=*/true);
  const std::string after = script.substr(script.find("forge_pid=$!"));
  // The watchdog's timer and the keep-alive are forge-box's; the rest are
  // the shell's builtins (kill, wait, printf, exec, trap).
  CHECK(after.find("'/forge/bin/forge-box' 'sleep' '30'") != std::string::npos);
  CHECK(after.find("'/forge/bin/forge-box' 'keepalive'") != std::string::npos);
  for (const char* program : {" sleep ", "(sleep", ";sleep", "\"sleep"}) {
    CHECK_MESSAGE(after.find(program) == std::string::npos, program);
  }
}

TEST_CASE("chunked bodies are de-chunked; a cut one is an error") {
  CHECK(*forge::sandbox::docker::Dechunk("4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n") == "Wikipedia");
  CHECK(forge::sandbox::docker::Dechunk("4\r\nWi").status().kind() == Kind::kProtocol);
  CHECK(forge::sandbox::docker::Dechunk("zz\r\n").status().kind() == Kind::kProtocol);
}

TEST_CASE("docker RunOnce: files, env, secret, output, status; nothing left, no secret in the config" * doctest::test_suite("host")) {
  forge::sandbox::docker::DockerBackend backend(forge::testing::HostEnv());
  FORGE_REQUIRE_DOCKER(backend);
  REQUIRE(std::system("bash " FORGE_SOURCE_DIR "/scripts/make-busybox-image.sh >/dev/null") == 0);
  forge::sandbox::Spec spec = BusyboxSpec("unit-oneshot-", 64LL << 20);
  spec.rollout_id = forge::RandomHex(8);
  const std::string secret = "forge-" + forge::RandomHex(12);

  forge::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "tree/sub");
  std::ofstream(dir.File("tree/sub/a.txt")) << "alpha";
  OneShot job;
  job.copies = {{dir.File("tree"), "/work"}};
  job.files = {{"/forge/instruction.md", "do 'it'\n"}, {"/root/.cfg/key", secret}};
  job.exec.env = {{"API_KEY", secret}};
  // Just before the start, look at the container's configuration from outside.
  job.exec.argv = {"/bin/sh", "-c",
                   "cat sub/a.txt; cat /forge/instruction.md; [ \"$(cat /root/.cfg/key)\" = \"$API_KEY\" ] "
                   "&& echo key-ok; echo err >&2; sleep 1; exit 3"};
  std::vector<std::string> phases;
  std::string inspected;
  job.on_phase = [&](const std::string& phase) {
    phases.push_back(phase);
    if (phase == "agent") {
      std::thread([&, name = "forge-" + spec.rollout_id] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        inspected = DockerInspect(name);
      }).join();
    }
  };
  auto ran = backend.RunOnce(spec, job, nullptr);
  REQUIRE_MESSAGE(ran.ok(), ran.status().message());
  CHECK(ran->exit_code == 3);
  CHECK(ran->stdout_data == "alphado 'it'\nkey-ok\n");
  CHECK(ran->stderr_data == "err\n");
  CHECK_FALSE(ran->timed_out);
  CHECK(phases == std::vector<std::string>{"create", "setup", "agent", "release"});
  CHECK(inspected.find("forge.rollout") != std::string::npos);  // it was inspected
  CHECK(inspected.find(secret) == std::string::npos);
  CHECK(inspected.find("\"AutoRemove\": true") != std::string::npos);
  CHECK(CountContainers(spec.run_id) == 0);
}

TEST_CASE("docker RunOnce: deadline, cancel and OOM; the container goes each time" * doctest::test_suite("host")) {
  forge::sandbox::docker::DockerBackend backend(forge::testing::HostEnv());
  FORGE_REQUIRE_DOCKER(backend);
  forge::sandbox::Spec spec = BusyboxSpec("unit-oneshot-", 32LL << 20);

  SUBCASE("deadline") {
    spec.rollout_id = forge::RandomHex(8);
    auto start = std::chrono::steady_clock::now();
    auto ran = backend.RunOnce(spec, RunawayJob(), nullptr);
    REQUIRE_MESSAGE(ran.ok(), ran.status().message());
    CHECK(ran->timed_out);
    CHECK(ran->stdout_data == "before\n");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  }
  SUBCASE("cancel") {
    spec.rollout_id = forge::RandomHex(8);
    auto ran = RunCancelled(backend, spec, nullptr);
    CHECK(ran.status().kind() == Kind::kCancelled);
  }
  SUBCASE("oom") {
    spec.rollout_id = forge::RandomHex(8);
    auto ran = backend.RunOnce(spec, MemoryHogJob(), nullptr);
    REQUIRE_MESSAGE(ran.ok(), ran.status().message());
    CHECK(ran->exit_code == 137);
    CHECK(ran->out_of_memory);
  }
  SUBCASE("unwritable file: CannotCreate, nothing ran") {
    spec.rollout_id = forge::RandomHex(8);
    spec.user = "65534";
    auto ran = backend.RunOnce(spec, UnwritableJob(), nullptr);
    CHECK(ran.status().kind() == Kind::kCannotCreate);
    CHECK(ran.status().message().find("/forge/instruction.md") != std::string::npos);
  }
  // AutoRemove works asynchronously right after the wait answers.
  for (int i = 0; i < 50 && CountContainers(spec.run_id) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(CountContainers(spec.run_id) == 0);
}

// Held: the harness is still the container's own process, but the container
// stays, running, for the verifier.
TEST_CASE("docker RunOnce held: status and output come back, the sandbox stays for exec, then goes" * doctest::test_suite("host")) {
  forge::sandbox::docker::DockerBackend backend(forge::testing::HostEnv());
  FORGE_REQUIRE_DOCKER(backend);
  REQUIRE(std::system("bash " FORGE_SOURCE_DIR "/scripts/make-busybox-image.sh >/dev/null") == 0);
  forge::sandbox::Spec spec = BusyboxSpec("unit-held-", 32LL << 20);
  std::unique_ptr<forge::sandbox::Sandbox> held;

  SUBCASE("exit status, output, files; leftovers kept as an exec'd sandbox keeps them") {
    spec.rollout_id = forge::RandomHex(8);
    const std::string secret = "forge-" + forge::RandomHex(12);
    OneShot job;
    job.files = {{"/root/.cfg/key", secret}};
    job.exec.env = {{"API_KEY", secret}};
    job.exec.argv = {"/bin/sh", "-c",
                     "echo out; echo err >&2; echo made > /work/made; (sleep 1000 &); "
                     "echo forge-held-not-the-marker 0 0 >&2; exit 5"};
    job.exec.timeout_seconds = 60;
    auto ran = backend.RunOnce(spec, job, &held);
    REQUIRE_MESSAGE(ran.ok(), ran.status().message());
    REQUIRE(held != nullptr);
    CHECK(ran->exit_code == 5);
    CHECK_FALSE(ran->timed_out);
    CHECK(ran->stdout_data == "out\n");
    CHECK(ran->stderr_data == "err\nforge-held-not-the-marker 0 0\n");
    CHECK(CountContainers(spec.run_id) == 1);
    forge::sandbox::ExecRequest look;
    look.argv = {"/bin/sh", "-c", "cat /work/made; ps -o args | grep -c '^sleep 1000'; cat /proc/1/cmdline | tr '\\0' ' '"};
    auto seen = held->Exec(look);
    REQUIRE_MESSAGE(seen.ok(), seen.status().message());
    CHECK(seen->stdout_data.rfind("made\n", 0) == 0);
    CHECK(seen->stdout_data.find("\n1\n") != std::string::npos);  // the leftover
    CHECK(seen->stdout_data.find("forge-oneshot") != std::string::npos);  // PID 1 is the script's shell
    const std::string inspected = DockerInspect(held->handle().id);
    CHECK(inspected.find("\"AutoRemove\": false") != std::string::npos);
    CHECK(inspected.find(secret) == std::string::npos);
  }
  SUBCASE("with forge-box, PID 1 runs forge-box's keep-alive once the command ended: nothing from PATH") {
    spec.rollout_id = forge::RandomHex(8);
    std::error_code ec;
    spec.box_binary = (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "forge-box").string();
    REQUIRE(std::filesystem::is_regular_file(spec.box_binary));
    OneShot job;
    // The agent's `sleep` and `sh` come first on PATH: PID 1 must not run them.
    job.exec.argv = {"/bin/sh", "-c",
                     "mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho 1 > /pwned\\n' > /usr/local/bin/sleep && "
                     "chmod 755 /usr/local/bin/sleep && (/bin/sleep 1000 &); exit 0"};
    job.exec.env = {{"PATH", "/usr/local/bin:/bin"}};
    job.exec.timeout_seconds = 60;
    auto ran = backend.RunOnce(spec, job, &held);
    REQUIRE_MESSAGE(ran.ok(), ran.status().message());
    REQUIRE(held != nullptr);
    CHECK(ran->exit_code == 0);
    forge::sandbox::ExecRequest look;
    look.argv = {"/bin/sh", "-c", "sleep 0.3; cat /proc/1/cmdline | tr '\\0' ' '; ls /pwned 2>&1 | head -1"};
    auto seen = held->Exec(look);
    REQUIRE_MESSAGE(seen.ok(), seen.status().message());
    CHECK(seen->stdout_data.starts_with("/forge/bin/forge-box keepalive "));
    CHECK(seen->stdout_data.find("No such file") != std::string::npos);
  }
  SUBCASE("the deadline kills every process but the sandbox's own, which stays") {
    spec.rollout_id = forge::RandomHex(8);
    auto start = std::chrono::steady_clock::now();
    auto ran = backend.RunOnce(spec, RunawayJob(), &held);
    REQUIRE_MESSAGE(ran.ok(), ran.status().message());
    REQUIRE(held != nullptr);
    CHECK(ran->timed_out);
    CHECK(ran->exit_code == 137);
    CHECK_FALSE(ran->out_of_memory);
    CHECK(ran->stdout_data == "before\n");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
    forge::sandbox::ExecRequest look;
    look.argv = {"/bin/sh", "-c", "ps -o args | grep -c '^sleep 1000'"};
    auto seen = held->Exec(look);
    REQUIRE_MESSAGE(seen.ok(), seen.status().message());
    CHECK(seen->stdout_data == "0\n");
  }
  SUBCASE("out of memory is classified and the sandbox stays") {
    spec.rollout_id = forge::RandomHex(8);
    auto ran = backend.RunOnce(spec, MemoryHogJob(), &held);
    REQUIRE_MESSAGE(ran.ok(), ran.status().message());
    REQUIRE(held != nullptr);
    CHECK(ran->exit_code == 137);
    CHECK(ran->out_of_memory);
    CHECK_FALSE(ran->timed_out);
  }
  SUBCASE("cancel and a setup failure remove it") {
    spec.rollout_id = forge::RandomHex(8);
    auto ran = RunCancelled(backend, spec, &held);
    CHECK(ran.status().kind() == Kind::kCancelled);
    CHECK(held == nullptr);

    spec.rollout_id = forge::RandomHex(8);
    spec.user = "65534";
    ran = backend.RunOnce(spec, UnwritableJob(), &held);
    CHECK(ran.status().kind() == Kind::kCannotCreate);
    CHECK(held == nullptr);
    CHECK(CountContainers(spec.run_id) == 0);
  }
  if (held) CHECK(held->Release().ok());
  CHECK(CountContainers(spec.run_id) == 0);
}
