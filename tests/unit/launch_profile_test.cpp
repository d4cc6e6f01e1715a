// forge-launch runs a harness profile on the local backend: config files land
// where the harness's env says they are (the real npm harnesses read their
// settings from {root}/forge/...).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "launch/launcher.h"
#include "records/jsonl.h"
#include "sandbox/local/local_backend.h"
#include "store/store.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

using forge::records::Json;

TEST_CASE("local backend: a profile's {root} config file is where its env points") {
  forge::testing::TempDir dir;
  std::filesystem::create_directories(dir.File("profiles"));
  Json profile = {
      {"name", "cfgcheck"},
      {"command", {"/bin/sh", "-c", "cat \"$APP_CONFIG\" && pwd"}},
      {"env", {{"APP_CONFIG", "{root}/forge/cfg-home/.app/settings.json"}}},
      {"config_files",
       {{"{root}/forge/cfg-home/.app/settings.json", "{\"base\": \"{proxy}/v1\", \"cwd\": \"{workdir}\"}"}}}};
  std::ofstream(dir.File("profiles/cfgcheck.json")) << profile.dump();
  std::ofstream(dir.File("tasks.jsonl")) << R"({"id":"t1","instruction":"do it"})" << "\n";

  auto store = forge::store::Store::Open(dir.File("forge.db"));
  REQUIRE(store.ok());
  forge::sandbox::local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"));
  auto out = forge::records::JsonlWriter::Create(dir.File("rollouts.jsonl"));
  REQUIRE(out.ok());
  forge::testing::FakeEnv env;
  forge::launch::LaunchOptions options;
  options.env = &env;
  options.inputs = {dir.File("tasks.jsonl")};
  options.run_id = "cfg-run";
  options.harness = "cfgcheck";
  options.harness_dir = dir.File("profiles");
  options.proxy = "http://127.0.0.1:9";
  options.infra_retries = 0;
  REQUIRE(forge::launch::Launch(options, backend, **store, **out).ok());
  out->reset();

  std::ifstream in(dir.File("rollouts.jsonl"));
  std::string line;
  REQUIRE(std::getline(in, line));
  Json record = Json::parse(line);
  INFO(record.dump());
  CHECK(record["outcome"] == "ok");
  const std::string sandbox_root =
      dir.File("root") + "/cfg-run/" + forge::launch::RolloutId("cfg-run", "t1", 0) + "/fs";
  CHECK(record["logs"]["stdout"] ==
        "{\"base\": \"http://127.0.0.1:9/v1\", \"cwd\": \"" + sandbox_root + "/work\"}" + sandbox_root + "/work\n");
}
