// Task records: forge JSONL and Harbor task directories read into one record.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tasks/harbor.h"
#include "tasks/load.h"
#include "tasks/task.h"
#include "forge_paths.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using forge::Kind;
using forge::Status;
using forge::tasks::Json;
using forge::tasks::Task;

namespace {

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A Harbor task exercising every mapped key.
void WriteHarborTask(const fs::path& dir, const std::string& extra_toml = "") {
  Write(dir / "task.toml", R"(version = "1.0"
source = "demo-dataset"

[metadata]
difficulty = "hard"
tags = ["a", "b"]

[verifier]
timeout_sec = 120.0
env = { JUDGE_KEY = "${JUDGE_KEY}" }
user = "root"

[agent]
timeout_sec = 900
user = "agent"

[solution]
env = { HINT = "x" }

[environment]
build_timeout_sec = 300.0
cpus = 2
memory = "4G"
storage_mb = 20480
gpus = 0
allow_internet = false
)" + extra_toml);
  Write(dir / "instruction.md", "Fix the bug in /app/main.c.\n\nThen run `make`.\n");
  Write(dir / "environment" / "Dockerfile", "FROM busybox\n");
  Write(dir / "tests" / "test.sh", "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n");
  Write(dir / "solution" / "solve.sh", "#!/bin/sh\ntrue\n");
}

// The same task as forge JSONL, paths relative to the JSONL file.
const char* kEquivalentJsonl = R"({"schema": "forge.task/1", "id": "fix-bug",)"
    R"( "instruction": "Fix the bug in /app/main.c.\n\nThen run `make`.\n",)"
    R"( "environment": {"build_context": "fix-bug/environment", "cpus": 2, "memory_mb": 4096,)"
    R"( "storage_mb": 20480, "gpus": 0, "allow_internet": false, "build_timeout_sec": 300},)"
    R"( "agent": {"timeout_sec": 900, "user": "agent"},)"
    R"( "verifier": {"kind": "harbor", "timeout_sec": 120, "env": {"JUDGE_KEY": "${JUDGE_KEY}"},)"
    R"( "user": "root", "tests_dir": "fix-bug/tests"},)"
    R"( "solution": {"dir": "fix-bug/solution", "env": {"HINT": "x"}},)"
    R"( "metadata": {"difficulty": "hard", "tags": ["a", "b"]},)"
    R"( "harbor": {"source": "demo-dataset"}})"
    "\n";

// What the loader reported (broken tasks, warnings) is in *env, when given.
std::vector<Task> LoadAll(const std::vector<std::string>& inputs, Status* status,
                          bool strict = false, forge::tasks::LoadStats* stats = nullptr,
                          forge::testing::FakeEnv* env = nullptr) {
  std::vector<Task> tasks;
  forge::tasks::LoadOptions options;
  options.strict = strict;
  forge::testing::FakeEnv unread;
  *status = forge::tasks::LoadTasks(
      inputs, env != nullptr ? *env : unread, options,
      [&](Task& task) {
        tasks.push_back(task);
        return Status::Ok();
      },
      stats);
  return tasks;
}

Json WithoutSource(Json record) {
  record.erase("source");
  return record;
}

}  // namespace

TEST_CASE("a Harbor task directory and the equivalent JSONL task give the same record") {
  forge::testing::TempDir tmp;
  WriteHarborTask(tmp.path() / "fix-bug");
  Write(tmp.path() / "tasks.jsonl", kEquivalentJsonl);

  Status status;
  std::vector<Task> from_dir = LoadAll({tmp.File("fix-bug")}, &status);
  REQUIRE(status.ok());
  std::vector<Task> from_jsonl = LoadAll({tmp.File("tasks.jsonl")}, &status);
  REQUIRE(status.ok());
  REQUIRE(from_dir.size() == 1);
  REQUIRE(from_jsonl.size() == 1);

  Json a = from_dir[0].ToJson();
  Json b = from_jsonl[0].ToJson();
  CHECK(WithoutSource(a).dump(2) == WithoutSource(b).dump(2));
  CHECK(a["source"] == (tmp.path() / "fix-bug").string());
  CHECK(b["source"] == tmp.File("tasks.jsonl") + ":1");

  // Spot checks of the mapping itself.
  const Task& t = from_dir[0];
  CHECK(t.id == "fix-bug");
  CHECK(t.environment.memory_mb == 4096);  // deprecated memory = "4G"
  CHECK(t.environment.build_context == (tmp.path() / "fix-bug" / "environment").string());
  CHECK(t.verifier.kind == forge::tasks::VerifierKind::kHarbor);
  CHECK(t.verifier.env.at("JUDGE_KEY") == "${JUDGE_KEY}");
  CHECK(t.agent.timeout_sec == 900);
  REQUIRE(t.solution.has_value());
  CHECK(t.solution->env.at("HINT") == "x");
}

TEST_CASE("the shipped example tasks read the same as examples/tasks.jsonl") {
  const std::string examples = std::string(FORGE_SOURCE_DIR) + "/examples";
  Status status;
  std::vector<Task> from_dirs = LoadAll({examples + "/tasks"}, &status);
  REQUIRE(status.ok());
  std::vector<Task> from_jsonl = LoadAll({examples + "/tasks.jsonl"}, &status);
  REQUIRE(status.ok());
  REQUIRE(from_dirs.size() == 2);
  REQUIRE(from_jsonl.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(WithoutSource(from_dirs[i].ToJson()) == WithoutSource(from_jsonl[i].ToJson()));
  }
  CHECK(from_dirs[0].id == "hello-file");
  CHECK(from_dirs[0].environment.image == "forge-busybox:latest");
  CHECK(from_dirs[0].environment.build_context.empty());
  CHECK(from_dirs[1].id == "sum-numbers");
}

TEST_CASE("defaults are Harbor's") {
  forge::testing::TempDir tmp;
  Write(tmp.path() / "t.jsonl", R"({"id": "t1", "instruction": "do it"})" "\n");
  Status status;
  std::vector<Task> tasks = LoadAll({tmp.File("t.jsonl")}, &status);
  REQUIRE(status.ok());
  REQUIRE(tasks.size() == 1);
  Json j = tasks[0].ToJson();
  CHECK(j["schema"] == "forge.task/1");
  CHECK(j["agent"]["timeout_sec"] == 600.0);
  CHECK(j["environment"]["cpus"] == 1.0);
  CHECK(j["environment"]["memory_mb"] == 2048);
  CHECK(j["environment"]["storage_mb"] == 10240);
  CHECK(j["environment"]["gpus"] == 0);
  CHECK(j["environment"]["allow_internet"] == true);
  CHECK(j["metadata"] == Json::object());
  CHECK_FALSE(j.contains("verifier"));  // none given: none invented
  CHECK_FALSE(j.contains("solution"));
}

TEST_CASE("unknown JSONL fields pass through untouched, at any depth") {
  forge::testing::TempDir tmp;
  Write(tmp.path() / "t.jsonl",
        R"({"id": "t1", "instruction": "x", "x_top": [1, {"a": null}],)"
        R"( "environment": {"image": "img", "x_env": "keep"},)"
        R"( "verifier": {"kind": "files", "x_ver": 3,)"
        R"( "expect": [{"path": "/work/a", "equals": "A", "x_item": true}]}})"
        "\n");
  Status status;
  std::vector<Task> tasks = LoadAll({tmp.File("t.jsonl")}, &status);
  REQUIRE(status.ok());
  REQUIRE(tasks.size() == 1);
  Json j = tasks[0].ToJson();
  CHECK(j["x_top"] == Json::parse(R"([1, {"a": null}])"));
  CHECK(j["environment"]["x_env"] == "keep");
  CHECK(j["environment"]["image"] == "img");
  CHECK(j["verifier"]["x_ver"] == 3);
  CHECK(j["verifier"]["expect"][0]["x_item"] == true);
  CHECK(j["verifier"]["expect"][0]["equals"] == "A");

  // Reading the written record again gives the same record.
  auto again = forge::tasks::TaskFromJson(j, tmp.path().string(), "again");
  REQUIRE(again.ok());
  CHECK(again->ToJson() == j);
}

TEST_CASE("unknown task.toml keys are warnings naming file, line and key, not errors") {
  forge::testing::TempDir tmp;
  WriteHarborTask(tmp.path() / "fix-bug", "shiny_new_knob = 3\n\n[future]\nthing = true\n");
  std::vector<std::string> warnings;
  auto task = forge::tasks::ReadHarborTask(tmp.File("fix-bug"), forge::testing::FakeEnv(), &warnings);
  REQUIRE(task.ok());
  REQUIRE(warnings.size() == 2);
  const std::string toml = tmp.File("fix-bug/task.toml");
  CHECK(Contains(warnings[0], toml + ":27: unknown key environment.shiny_new_knob"));
  CHECK(Contains(warnings[1], toml + ":29: unknown key future"));
  // Not lost either: kept under "harbor".
  Json j = task->ToJson();
  CHECK(j["harbor"]["environment"]["shiny_new_knob"] == 3);
  CHECK(j["harbor"]["future"]["thing"] == true);

  // Through LoadTasks the warnings are reported as warnings and the task still loads.
  forge::testing::FakeEnv env;
  forge::tasks::LoadStats stats;
  Status status;
  std::vector<Task> tasks = LoadAll({tmp.File("fix-bug")}, &status, false, &stats, &env);
  CHECK(status.ok());
  CHECK(tasks.size() == 1);
  CHECK(stats.warnings == 2);
  CHECK(env.Reported("warning", toml + ":27: unknown key environment.shiny_new_knob"));
  CHECK(env.Texts("warning").size() == 2);
  CHECK(env.Texts("error").empty());
}

TEST_CASE("broken Harbor tasks give errors naming file and field") {
  forge::testing::TempDir tmp;
  const fs::path dir = tmp.path() / "t";
  const std::string toml = (dir / "task.toml").string();
  std::vector<std::string> warnings;

  SUBCASE("missing instruction.md") {
    WriteHarborTask(dir);
    fs::remove(dir / "instruction.md");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(task.status().kind() == Kind::kInvalidData);
    CHECK(Contains(task.status().message(), (dir / "instruction.md").string() + ": missing"));
  }
  SUBCASE("TOML syntax error") {
    WriteHarborTask(dir);
    Write(dir / "task.toml", "[agent]\ntimeout_sec = 10\n[verifier\n");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(task.status().kind() == Kind::kInvalidData);
    CHECK(Contains(task.status().message(), toml + ":3:"));
  }
  SUBCASE("wrong type, named by its TOML key and line") {
    WriteHarborTask(dir);
    Write(dir / "task.toml", "[environment]\ncpus = 2\ndocker_image = 7\n");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(task.status().message() ==
          toml + ":3: environment.docker_image: expected a string, got number");
  }
  SUBCASE("out of range") {
    WriteHarborTask(dir);
    Write(dir / "task.toml", "[agent]\ntimeout_sec = -5\n");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(task.status().message() == toml + ":2: agent.timeout_sec: must be greater than 0");
  }
  SUBCASE("a verifier env value that is not a string") {
    WriteHarborTask(dir);
    Write(dir / "task.toml", "[verifier]\nenv = { A = 1 }\n");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(task.status().message() == toml + ":2: verifier.env.A: expected a string, got number");
  }
  SUBCASE("a section that is not a table") {
    WriteHarborTask(dir);
    Write(dir / "task.toml", "agent = 3\n");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(task.status().message() == toml + ":1: agent: expected a table, got integer");
  }
  SUBCASE("bad deprecated size string") {
    WriteHarborTask(dir);
    Write(dir / "task.toml", "[environment]\nmemory = \"4X\"\n");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(Contains(task.status().message(), toml + ":2: environment.memory: invalid size"));
  }
  SUBCASE("deprecated and new size disagree") {
    WriteHarborTask(dir);
    Write(dir / "task.toml", "[environment]\nmemory = \"1G\"\nmemory_mb = 2048\n");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(Contains(task.status().message(), "disagree"));
  }
  SUBCASE("no Dockerfile and no docker_image") {
    WriteHarborTask(dir);
    fs::remove(dir / "environment" / "Dockerfile");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(Contains(task.status().message(), (dir / "environment/Dockerfile").string()));
  }
  SUBCASE("no tests/test.sh") {
    WriteHarborTask(dir);
    fs::remove(dir / "tests" / "test.sh");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(Contains(task.status().message(), (dir / "tests/test.sh").string() + ": missing"));
  }
  SUBCASE("multi-step tasks are refused, not half-run") {
    WriteHarborTask(dir);
    Write(dir / "task.toml", "[[steps]]\nname = \"one\"\n");
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
    REQUIRE_FALSE(task.ok());
    CHECK(Contains(task.status().message(), "multi-step"));
  }
}

TEST_CASE("deprecated Harbor size strings") {
  CHECK(*forge::tasks::ParseSizeMb("4G") == 4096);
  CHECK(*forge::tasks::ParseSizeMb("512M") == 512);
  CHECK(*forge::tasks::ParseSizeMb("2048K") == 2);
  CHECK(*forge::tasks::ParseSizeMb("1.5g") == 1536);
  CHECK_FALSE(forge::tasks::ParseSizeMb("4").ok());
  CHECK_FALSE(forge::tasks::ParseSizeMb("4GB").ok());
  CHECK_FALSE(forge::tasks::ParseSizeMb("G").ok());
  CHECK_FALSE(forge::tasks::ParseSizeMb("-1G").ok());
}

TEST_CASE("a malformed JSONL line is skipped with file:line while the other tasks load") {
  forge::testing::TempDir tmp;
  const std::string path = tmp.File("tasks.jsonl");
  Write(path,
        R"({"id": "a", "instruction": "x"})" "\n"
        R"({"id": "b", "instruction": )" "\n"                          // malformed JSON
        R"({"id": "c", "instruction": "x", "environment": {"cpus": "two"}})" "\n"  // wrong type
        R"({"id": "d"})" "\n"                                           // missing field
        R"({"id": "e", "instruction": "x", "verifier": {"kind": "magic"}})" "\n"
        R"({"id": "a", "instruction": "again"})" "\n"                   // duplicate id
        R"({"id": "f", "instruction": "x"})" "\n");
  forge::testing::FakeEnv env;
  forge::tasks::LoadStats stats;
  Status status;
  std::vector<Task> tasks = LoadAll({path}, &status, false, &stats, &env);

  REQUIRE(tasks.size() == 2);
  CHECK(tasks[0].id == "a");
  CHECK(tasks[1].id == "f");
  CHECK(status.kind() == Kind::kInvalidData);
  CHECK(status.message() == "5 broken tasks skipped");
  CHECK(stats.broken == 5);
  CHECK(stats.loaded == 2);
  // Each broken one is reported once, as an error naming file, line and field.
  const std::vector<std::string> errors = env.Texts("error");
  REQUIRE(errors.size() == 5);
  CHECK(Contains(errors[0], path + ":2: "));
  CHECK(errors[1] == path + ":3: environment.cpus: expected a number, got string (task skipped)");
  CHECK(Contains(errors[2], path + ":4: instruction: missing"));
  CHECK(Contains(errors[3], path + ":5: verifier.kind: unknown kind \"magic\""));
  CHECK(Contains(errors[4], path + ":6: id: duplicate task id \"a\" (first read from " + path + ":1)"));
}

TEST_CASE("strict mode stops at the first broken task") {
  forge::testing::TempDir tmp;
  const std::string path = tmp.File("tasks.jsonl");
  Write(path, R"({"id": "a", "instruction": "x"})" "\n"
              "not json\n"
              R"({"id": "b", "instruction": "x"})" "\n");
  Status status;
  std::vector<Task> tasks = LoadAll({path}, &status, /*strict=*/true);
  CHECK(tasks.size() == 1);
  CHECK(status.kind() == Kind::kInvalidData);
  CHECK(Contains(status.message(), path + ":2: "));

  Write(path, R"({"id": "a", "instruction": "x", "agent": {"timeout_sec": "soon"}})" "\n"
              R"({"id": "b", "instruction": "x"})" "\n");
  tasks = LoadAll({path}, &status, /*strict=*/true);
  CHECK(tasks.empty());
  CHECK(status.message() == path + ":1: agent.timeout_sec: expected a number, got string");
}

TEST_CASE("a directory of Harbor tasks loads them all, in name order, skipping a broken one") {
  forge::testing::TempDir tmp;
  WriteHarborTask(tmp.path() / "set" / "b-task");
  WriteHarborTask(tmp.path() / "set" / "a-task");
  WriteHarborTask(tmp.path() / "set" / "c-broken");
  fs::remove(tmp.path() / "set" / "c-broken" / "instruction.md");
  fs::create_directories(tmp.path() / "set" / "notes");  // no task.toml: skipped with a warning

  forge::testing::FakeEnv env;
  forge::tasks::LoadStats stats;
  Status status;
  std::vector<Task> tasks = LoadAll({tmp.File("set")}, &status, false, &stats, &env);
  REQUIRE(tasks.size() == 2);
  CHECK(tasks[0].id == "a-task");
  CHECK(tasks[1].id == "b-task");
  CHECK(status.kind() == Kind::kInvalidData);
  CHECK(stats.broken == 1);
  CHECK(env.Reported("error", "c-broken/instruction.md: missing"));
  CHECK(env.Reported("warning", "notes: no task.toml"));

  // Strict: the broken one stops the load.
  tasks = LoadAll({tmp.File("set")}, &status, /*strict=*/true);
  CHECK(tasks.size() == 2);  // a-task and b-task come first in name order
  CHECK(Contains(status.message(), "c-broken/instruction.md: missing"));
}

TEST_CASE("\"-\" reads tasks from stdin; relative paths resolve against the working directory") {
  forge::testing::TempDir tmp;
  WriteHarborTask(tmp.path() / "fix-bug");
  Write(tmp.path() / "tasks.jsonl", kEquivalentJsonl);
  const fs::path cwd = fs::current_path();
  fs::current_path(tmp.path());
  std::fflush(stdin);
  int saved = dup(STDIN_FILENO);
  std::FILE* in = std::fopen((tmp.path() / "tasks.jsonl").c_str(), "rb");
  dup2(fileno(in), STDIN_FILENO);
  Status status;
  std::vector<Task> tasks = LoadAll({"-"}, &status);
  dup2(saved, STDIN_FILENO);
  close(saved);
  std::fclose(in);
  std::clearerr(stdin);
  fs::current_path(cwd);

  REQUIRE(status.ok());
  REQUIRE(tasks.size() == 1);
  CHECK(tasks[0].source == "<stdin>:1");
  CHECK(tasks[0].verifier.tests_dir == (tmp.path() / "fix-bug" / "tests").string());
}

TEST_CASE("inputs that are not there") {
  forge::testing::TempDir tmp;
  Status status;
  LoadAll({tmp.File("nope.jsonl")}, &status);
  CHECK(status.kind() == Kind::kNotFound);
  CHECK(Contains(status.message(), "nope.jsonl"));

  fs::create_directories(tmp.path() / "empty");
  LoadAll({tmp.File("empty")}, &status);
  CHECK(status.kind() == Kind::kNotFound);
}

TEST_CASE("task record validation names the field") {
  forge::testing::TempDir tmp;
  Write(tmp.path() / "tests" / "test.sh", "#!/bin/sh\n");
  auto check = [&](const char* text, const std::string& expected) {
    auto task = forge::tasks::TaskFromJson(Json::parse(text), tmp.path().string(), "here");
    REQUIRE_FALSE(task.ok());
    CHECK(task.status().kind() == Kind::kInvalidData);
    CHECK(task.status().message() == expected);
  };
  check(R"({"instruction": "x"})", "id: missing");
  check(R"({"id": "", "instruction": "x"})", "id: empty");
  check(R"({"id": 5, "instruction": "x"})", "id: expected a string, got number");
  check(R"({"schema": "forge.task/9", "id": "a", "instruction": "x"})",
        "schema: unsupported \"forge.task/9\" (this forge reads forge.task/1)");
  check(R"({"id": "a", "instruction": "x", "environment": {"memory_mb": 1.5}})",
        "environment.memory_mb: expected an integer, got number");
  check(R"({"id": "a", "instruction": "x", "environment": {"gpus": -1}})",
        "environment.gpus: must be at least 0");
  check(R"({"id": "a", "instruction": "x", "environment": {"allow_internet": "yes"}})",
        "environment.allow_internet: expected true or false, got string");
  check(R"({"id": "a", "instruction": "x", "metadata": []})",
        "metadata: expected an object, got array");
  check(R"({"id": "a", "instruction": "x", "verifier": {"kind": "command"}})",
        "verifier.command: missing");
  check(R"({"id": "a", "instruction": "x", "verifier": {"kind": "judge"}})",
        "verifier.rubric: missing");
  check(R"({"id": "a", "instruction": "x", "verifier": {"kind": "files", "expect": [{"path": "rel"}]}})",
        "verifier.expect[0].path: must be an absolute path");
  check(R"({"id": "a", "instruction": "x", "verifier": {"kind": "harbor", "tests_dir": "nope"}})",
        "verifier.tests_dir: " + (tmp.path() / "nope").string() + ": not a directory");
  check(R"({"id": "a", "instruction": "x", "solution": {"dir": "tests", "script": "true"}})",
        "solution.dir: " + (tmp.path() / "tests" / "solve.sh").string() + ": missing");
  check(R"({"id": "a", "instruction": "x", "solution": {}})",
        "solution: give exactly one of \"dir\" or \"script\"");

  // And the good ones of each verifier kind.
  auto ok = forge::tasks::TaskFromJson(
      Json::parse(R"({"id": "a", "instruction": "x", "verifier": {"kind": "harbor", "tests_dir": "tests/"}})"),
      tmp.path().string(), "here");
  REQUIRE(ok.ok());
  CHECK(ok->verifier.tests_dir == (tmp.path() / "tests").string());
  ok = forge::tasks::TaskFromJson(
      Json::parse(R"({"id": "a", "instruction": "x", "verifier": {"kind": "judge", "rubric": "r", "model": "m"},)"
                  R"( "solution": {"script": "echo hi"}, "harness": "react"})"),
      tmp.path().string(), "here");
  REQUIRE(ok.ok());
  CHECK(ok->verifier.kind == forge::tasks::VerifierKind::kJudge);
  CHECK(ok->ToJson()["verifier"]["model"] == "m");
  CHECK(ok->ToJson()["solution"]["script"] == "echo hi");
  CHECK(ok->ToJson()["harness"] == "react");
  CHECK(ok->source == "here");
}
