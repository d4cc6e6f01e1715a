// The run's task list (launch/task_list.h): a task kept as its facts and
// its spooled record gives back, as its rollout starts, the TaskSpec its
// reading made — for every kind of task the corpus holds.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "launch/task_input.h"
#include "launch/task_list.h"
#include "tasks/load.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"
#include "forge_paths.h"

using forge::Kind;
using forge::launch::TaskList;
using forge::launch::TaskSpec;
using forge::records::Json;

namespace {

Json Optional(const auto& value) { return value ? Json(*value) : Json(); }

Json Healthcheck(const std::optional<forge::tasks::Healthcheck>& h) {
  if (!h) return nullptr;
  return {h->command, h->interval_sec, h->timeout_sec, h->start_period_sec, h->start_interval_sec, h->retries};
}

Json Healthcheck(const std::optional<forge::sandbox::Healthcheck>& h) {
  if (!h) return nullptr;
  return {h->test, h->interval_seconds, h->timeout_seconds, h->start_period_seconds, h->retries};
}

// Every field of a TaskSpec that a rollout reads, as one comparable value.
Json Describe(const TaskSpec& t) {
  Json pod = nullptr;
  if (t.pod) {
    pod = Json::array();
    for (const auto& s : t.pod->services) {
      pod.push_back(Json::array({s.name, s.image, s.build_context, Optional(s.entrypoint), Optional(s.command), s.env,
                                 s.workdir, s.user, s.depends_on.size(), s.mounts.size(), Healthcheck(s.healthcheck)}));
    }
    pod.push_back(Json::array({t.pod->main_depends_on.size(), t.pod->main_mounts.size(), t.pod->volumes,
                               Healthcheck(t.pod->main_healthcheck)}));
  }
  Json pod_env = {t.pod_env.main.size(), t.pod_env.services.size()};
  Json mcp = Json::array();
  for (const auto& m : t.mcp_servers) mcp.push_back({m.name, m.transport, m.url, m.command, m.args});
  return {{"strings", {t.id, t.instruction, t.image, t.build_context, t.files_dir, t.skills_dir, t.solution_dir,
                       t.solution_script, t.harness, t.command, t.user, t.workdir, t.sandbox_skills_dir}},
          {"limits", {t.agent_timeout_seconds, Optional(t.cpus), Optional(t.memory_bytes), Optional(t.pids),
                      Optional(t.allow_internet), t.gpus, t.build_timeout_seconds}},
          {"env", {t.env, t.solution_env}},
          {"healthcheck", Healthcheck(t.healthcheck)},
          {"display", t.display ? Json(t.display->ToString()) : Json()},
          {"pod", pod},
          {"pod_env", pod_env},
          {"mcp", mcp},
          {"record", Json::parse(t.record)}};
}

// The corpus's Harbor tasks and a JSONL file whose launcher-only fields are
// relative to it, read as forge-launch reads them.
struct Read {
  std::vector<forge::tasks::Task> tasks;
  std::vector<TaskSpec> specs;
};

Read ReadCorpus(const forge::testing::TempDir& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir.path() / "files" / "sub");
  fs::create_directories(dir.path() / "skills" / "one");
  std::ofstream(dir.File("skills/one/SKILL.md")) << "# one\n";
  std::ofstream(dir.File("tasks.jsonl"))
      << R"({"id":"j1","instruction":"do","files":"files","skills":"skills","command":"echo hi",)"
      << R"("display":"800x600x24","resources":{"pids":64},"agent":{"timeout_sec":30,"user":"agent"},)"
      << R"("environment":{"image":"img","cpus":2,"memory_mb":512,"allow_internet":false,"env":{"A":"${HOME:-x}"},)"
      << R"("workdir":"/w","healthcheck":{"command":"true","retries":2}},"solution":{"script":"echo s"},"x-extra":{"k":[1]}})"
      << "\n"
      << R"({"id":"j2","instruction":"bare"})" << "\n";
  std::vector<std::string> inputs = {dir.File("tasks.jsonl")};
  for (const auto& entry : fs::directory_iterator(FORGE_SOURCE_DIR "/tests/data/harbor")) {
    inputs.push_back(entry.path().string());
  }
  std::sort(inputs.begin() + 1, inputs.end());
  forge::testing::FakeEnv env;
  Read read;
  forge::tasks::LoadOptions quiet;
  quiet.on_warning = [](const std::string&) {};
  quiet.on_broken = [](const std::string&) {};
  (void)forge::tasks::LoadTasks(inputs, env, quiet, [&](forge::tasks::Task& task) {
    auto spec = forge::launch::SpecFromTask(task);
    if (spec.ok()) {
      read.tasks.push_back(task);
      read.specs.push_back(std::move(*spec));
    }
    return forge::Status::Ok();
  });
  return read;
}

// The corpus in a task list spooled in dir.
forge::Result<TaskList> Listed(const Read& read, const forge::testing::TempDir& dir) {
  auto list = TaskList::Open(dir.path().string());
  REQUIRE_MESSAGE(list.ok(), list.status().message());
  for (size_t i = 0; i < read.specs.size(); ++i) REQUIRE(list->Add(read.tasks[i], read.specs[i]).ok());
  return list;
}

}  // namespace

TEST_CASE("a task list gives back each task's TaskSpec as its reading made it") {
  forge::testing::TempDir dir;
  const auto read = ReadCorpus(dir);
  const auto& specs = read.specs;
  // Both JSONL tasks and most of the corpus (the refused ones are skipped).
  REQUIRE(specs.size() >= 20);
  auto list = Listed(read, dir);
  REQUIRE(list->size() == specs.size());
  size_t pods = 0, builds = 0, offline = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto again = list->Spec(i);
    REQUIRE_MESSAGE(again.ok(), specs[i].id << ": " << again.status().message());
    CHECK_MESSAGE(Describe(*again) == Describe(specs[i]),
                  specs[i].id << "\nread:    " << Describe(specs[i]).dump() << "\nrebuilt: " << Describe(*again).dump());
    CHECK(*list->Record(i) == specs[i].record);
    const auto& facts = list->facts(i);
    CHECK(facts.id == specs[i].id);
    CHECK(facts.allow_internet == specs[i].allow_internet);
    CHECK(facts.has_pod == (specs[i].pod != nullptr));
    pods += facts.has_pod;
    builds += facts.builds_images;
    offline += facts.allow_internet == false;
  }
  // The corpus has each kind the run's checks look for.
  CHECK(pods > 0);
  CHECK(builds > 0);
  CHECK(offline > 0);
  // A limit the task leaves unset stays the launcher's (--cpus, --memory,
  // --agent-timeout), though the record fills in its default.
  REQUIRE(specs[1].id == "j2");
  CHECK_FALSE(list->Spec(1)->cpus.has_value());
  CHECK_FALSE(list->Spec(1)->memory_bytes.has_value());
  CHECK(list->Spec(1)->agent_timeout_seconds == 0);
  // The JSONL task's relative directories resolved against its file, as read.
  CHECK(specs[0].files_dir == dir.File("files"));
  CHECK(specs[0].display.has_value());
}

TEST_CASE("a task list read from several threads at once gives each its own task") {
  forge::testing::TempDir dir;
  const auto read = ReadCorpus(dir);
  const auto& specs = read.specs;
  auto list = Listed(read, dir);
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = t; i < specs.size(); i += 2) {
          auto spec = list->Spec(i);
          if (!spec.ok() || spec->record != specs[i].record) ++wrong[t];
        }
      }
    });
  }
  for (auto& reader : readers) reader.join();
  CHECK(wrong == std::vector<int>(4, 0));
}

TEST_CASE("a task whose directory is gone when its rollout starts is named; the others still build") {
  forge::testing::TempDir dir;
  const auto read = ReadCorpus(dir);
  const auto& specs = read.specs;
  auto list = Listed(read, dir);
  std::filesystem::remove_all(dir.path() / "files");
  auto gone = list->Spec(0);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.status().kind() == Kind::kInvalidData);
  CHECK(gone.status().message().find("task j1") != std::string::npos);
  CHECK(gone.status().message().find("files") != std::string::npos);
  CHECK(list->Record(0).ok());
  CHECK(list->Spec(1).ok());
}

TEST_CASE("a task list that cannot spool says where") {
  auto list = TaskList::Open("/nonexistent/forge-spool");
  REQUIRE_FALSE(list.ok());
  CHECK(list.status().kind() == Kind::kCannotCreate);
  CHECK(list.status().message().find("/nonexistent/forge-spool") != std::string::npos);
  // Its file is unlinked from the start: nothing is left in the directory.
  forge::testing::TempDir dir;
  {
    auto open = TaskList::Open(dir.path().string());
    REQUIRE(open.ok());
    CHECK(std::filesystem::is_empty(dir.path()));
  }
}
