// How a real harness installed on the host reaches a sandbox: the
// {harnesses} placeholder, the read-only bind mount the docker backend makes
// for it (against the real engine), and the launcher's check that the
// install directory exists before any rollout tries to run from it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "base/hash.h"
#include "launch/harness.h"
#include "launch/launcher.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/local/local_backend.h"
#include "store/store.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"
#include "forge_paths.h"
#include "support/skip.h"

using forge::Kind;
using forge::records::Json;

TEST_CASE("UsesPlaceholder finds {harnesses} in command, env and config files only") {
  forge::launch::HarnessProfile p;
  p.command = {"sh", "-c", "true"};
  p.env = {{"A", "{proxy}"}};
  CHECK_FALSE(forge::launch::UsesPlaceholder(p, "harnesses"));
  p.description = "runs from {harnesses}";  // prose does not count
  CHECK_FALSE(forge::launch::UsesPlaceholder(p, "harnesses"));
  p.command = {"{harnesses}/claude-code/bin/claude"};
  CHECK(forge::launch::UsesPlaceholder(p, "harnesses"));
  p.command = {"x"};
  p.env = {{"NODE", "{harnesses}/node24/bin/node"}};
  CHECK(forge::launch::UsesPlaceholder(p, "harnesses"));
  p.env.clear();
  p.config_files = {{"/forge/c.toml", "bin = \"{harnesses}/x\""}};
  CHECK(forge::launch::UsesPlaceholder(p, "harnesses"));
  CHECK_FALSE(forge::launch::UsesPlaceholder(p, "harness"));
}

TEST_CASE("the claude-code profile runs the installed binary, not one on PATH") {
  auto p = forge::launch::LoadHarness(FORGE_SOURCE_DIR "/harnesses", "claude-code");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  REQUIRE_FALSE(p->command.empty());
  CHECK(p->command[0] == "{harnesses}/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe");
  CHECK(p->env.at("ANTHROPIC_BASE_URL") == "{proxy}");
  CHECK(p->env.at("ANTHROPIC_API_KEY") == "{secret}");
  CHECK(p->env.at("ANTHROPIC_MODEL") == "{model}");
  for (const char* off : {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY",
                          "DISABLE_ERROR_REPORTING", "DISABLE_AUTOUPDATER"}) {
    CHECK_MESSAGE(p->env.at(off) == "1", off);
  }
  CHECK(forge::launch::UsesPlaceholder(*p, "harnesses"));
}

TEST_CASE("docker bind mounts: read-only by default, absolute paths only") {
  auto mounts = forge::sandbox::docker::BindMounts(
      {{"/home/u/.cache/forge/harnesses", "/opt/forge/harnesses", true}, {"/data", "/data", false}});
  REQUIRE(mounts.ok());
  CHECK(*mounts == Json::parse(R"([
    {"Type":"bind","Source":"/home/u/.cache/forge/harnesses","Target":"/opt/forge/harnesses","ReadOnly":true},
    {"Type":"bind","Source":"/data","Target":"/data","ReadOnly":false}])"));
  auto relative = forge::sandbox::docker::BindMounts({{"cache/harnesses", "/opt/forge/harnesses", true}});
  CHECK(relative.status().kind() == Kind::kBadConfig);
  CHECK(relative.status().message().find("cache/harnesses") != std::string::npos);
  CHECK(forge::sandbox::docker::BindMounts({{"/a", "opt", true}}).status().kind() == Kind::kBadConfig);
}

TEST_CASE("docker backend: a read-only mount is seen in the container and cannot be written" * doctest::test_suite("host")) {
  forge::sandbox::docker::DockerBackend backend(forge::testing::HostEnv());
  FORGE_REQUIRE_DOCKER(backend);
  REQUIRE(std::system("bash " FORGE_SOURCE_DIR "/scripts/make-busybox-image.sh") == 0);
  forge::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "h/claude-code");
  std::ofstream(dir.File("h/claude-code/VERSION")) << "2.1.332";
  forge::sandbox::Spec spec;
  spec.run_id = "unit-mount-" + forge::RandomHex(4);
  spec.rollout_id = forge::RandomHex(8);
  spec.image = "forge-busybox:latest";
  spec.limits.memory_bytes = 64LL << 20;
  spec.limits.cpus = 1;
  spec.lifetime_seconds = 120;
  spec.mounts = {{dir.File("h"), "/opt/forge/harnesses", true}};
  auto created = backend.Create(spec);
  REQUIRE_MESSAGE(created.ok(), created.status().message());
  auto& box = *created;
  forge::sandbox::ExecRequest exec;
  exec.argv = {"/bin/sh", "-c",
               "cat /opt/forge/harnesses/claude-code/VERSION; echo x > /opt/forge/harnesses/new && echo wrote"};
  auto ran = box->Exec(exec);
  CHECK(box->Release().ok());
  REQUIRE_MESSAGE(ran.ok(), ran.status().message());
  CHECK(ran->stdout_data == "2.1.332");
  CHECK(ran->exit_code != 0);
  CHECK(ran->stderr_data.find("Read-only file system") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "h/new"));

  // A missing host directory is the engine's error, named, not a hang.
  spec.rollout_id = forge::RandomHex(8);
  spec.mounts = {{dir.File("missing"), "/opt/forge/harnesses", true}};
  auto missing = backend.Create(spec);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("missing") != std::string::npos);
  (void)backend.Collect(spec.run_id, 0);
}

TEST_CASE("launcher: a profile needing {harnesses} with no install dir is one clear infra error") {
  forge::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "profiles");
  std::ofstream(dir.File("profiles/needs.json"))
      << R"({"name":"needs","command":["{harnesses}/needs/bin/run"]})";
  std::ofstream(dir.File("tasks.jsonl")) << R"({"id":"t1","instruction":"x"})" << "\n";
  auto store = forge::store::Store::Open(dir.File("forge.db"));
  REQUIRE(store.ok());
  auto out = forge::records::JsonlWriter::Create(dir.File("rollouts.jsonl"));
  REQUIRE(out.ok());
  forge::sandbox::local::LocalBackend backend(forge::testing::HostEnv(), dir.File("local"));
  forge::testing::FakeEnv env;
  forge::launch::LaunchOptions options;
  options.env = &env;
  options.inputs = {dir.File("tasks.jsonl")};
  options.run_id = "unit-needs";
  options.harness = "needs";
  options.harness_dir = dir.File("profiles");
  options.harness_install_dir = dir.File("not-installed");
  options.infra_retries = 0;
  forge::Status launched = forge::launch::Launch(options, backend, **store, **out);
  CHECK(launched.Is(forge::Kind::kUnavailable));  // forge-launch exits 69: an infrastructure error
  out->reset();
  std::ifstream in(dir.File("rollouts.jsonl"));
  std::string line;
  REQUIRE(std::getline(in, line));
  Json record = Json::parse(line);
  CHECK(record["outcome"] == "infra_error");
  const std::string error = record["error"];
  CHECK(error.find(dir.File("not-installed")) != std::string::npos);
  CHECK(error.find("install-harnesses.sh") != std::string::npos);
}
