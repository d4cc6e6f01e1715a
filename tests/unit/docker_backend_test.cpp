// The docker backend's sandbox operations against the real engine, as
// forge-verify uses them: copy a tree in, exec with stdin, read a file back,
// attach by handle from "another process", release, collect by label.
// Skipped (with a message) only when no engine answers on the socket.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "base/hash.h"
#include "sandbox/docker/docker_backend.h"
#include "support/temp_dir.h"
#include "forge_paths.h"
#include "support/fake_env.h"
#include "support/skip.h"

using forge::Kind;

TEST_CASE("docker backend: copy in, exec, read back, attach, release, collect" * doctest::test_suite("host")) {
  forge::sandbox::docker::DockerBackend backend(forge::testing::HostEnv());
  FORGE_REQUIRE_DOCKER(backend);
  REQUIRE(std::system("bash " FORGE_SOURCE_DIR "/scripts/make-busybox-image.sh") == 0);
  forge::sandbox::Spec spec;
  spec.run_id = "unit-" + forge::RandomHex(4);
  spec.rollout_id = forge::RandomHex(8);
  spec.image = "forge-busybox:latest";
  spec.limits.memory_bytes = 128LL << 20;
  spec.limits.cpus = 1;
  spec.env = {{"FROM_SPEC", "yes"}};
  spec.lifetime_seconds = 300;
  auto created = backend.Create(spec);
  REQUIRE_MESSAGE(created.ok(), created.status().message());
  auto& box = *created;

  forge::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "tree/sub");
  std::ofstream(dir.File("tree/sub/a.txt")) << "alpha";
  std::ofstream(dir.File("tree/top.txt")) << "top";
  REQUIRE(box->CopyIn(dir.File("tree"), "/work/deep/er").ok());  // created on demand

  forge::sandbox::ExecRequest exec;
  exec.argv = {"/bin/sh", "-c", "cat deep/er/sub/a.txt; read line; echo \" $line $FROM_SPEC $X\"; echo err >&2; exit 3"};
  exec.env = {{"X", "x"}};
  exec.stdin_data = "from-stdin\n";
  auto ran = box->Exec(exec);
  REQUIRE_MESSAGE(ran.ok(), ran.status().message());
  CHECK(ran->exit_code == 3);
  CHECK(ran->stdout_data == "alpha from-stdin yes x\n");
  CHECK(ran->stderr_data == "err\n");
  CHECK_FALSE(ran->timed_out);
  CHECK_FALSE(ran->out_of_memory);

  CHECK(*box->ReadFile("/work/deep/er/top.txt", 100) == "top");
  CHECK(*box->ReadFile("/work/deep/er/top.txt", 2) == "to");
  CHECK(box->ReadFile("/work/missing", 100).status().kind() == Kind::kNotFound);

  auto attached = backend.Attach(box->handle());
  REQUIRE(attached.ok());
  CHECK(*(*attached)->ReadFile("/work/deep/er/sub/a.txt", 100) == "alpha");
  CHECK(backend.Attach({"docker", "forge-no-such-container"}).status().kind() == Kind::kNotFound);
  CHECK(backend.Attach({"local", "x"}).status().kind() == Kind::kBadConfig);

  REQUIRE(box->Release().ok());
  CHECK(box->Release().ok());  // twice is fine
  CHECK(backend.Attach(box->handle()).status().kind() == Kind::kNotFound);

  // Two more for the run; collect removes both, and nothing of other runs.
  for (int i = 0; i < 2; ++i) {
    auto s = spec;
    s.rollout_id = forge::RandomHex(8);
    REQUIRE(backend.Create(s).ok());
  }
  auto young = backend.Collect(spec.run_id, 3600);
  REQUIRE(young.ok());
  CHECK(*young == 0);
  auto removed = backend.Collect(spec.run_id, 0);
  REQUIRE(removed.ok());
  CHECK(*removed == 2);
  CHECK(*backend.Collect(spec.run_id, 0) == 0);
}

TEST_CASE("docker backend: a missing image is NotFound naming it (not retried)" * doctest::test_suite("host")) {
  forge::sandbox::docker::DockerBackend backend(forge::testing::HostEnv());
  FORGE_REQUIRE_DOCKER(backend);
  forge::sandbox::Spec spec;
  spec.run_id = "unit-missing";
  spec.rollout_id = forge::RandomHex(8);
  spec.image = "forge-no-such-image:never";
  auto created = backend.Create(spec);
  CHECK(created.status().kind() == Kind::kNotFound);
  CHECK(created.status().message().find("forge-no-such-image") != std::string::npos);
}

TEST_CASE("docker backend: the engine is the one $DOCKER_HOST names; one that is not there is Unavailable") {
  forge::testing::FakeEnv env({{"DOCKER_HOST", std::string("unix:///nonexistent/docker.sock")}});
  forge::sandbox::docker::DockerBackend nowhere(env);
  auto ping = nowhere.Ping();
  CHECK(ping.kind() == Kind::kUnavailable);
  CHECK(ping.message().find("/nonexistent/docker.sock") != std::string::npos);
}
