// Harbor parity: the schema table, the task corpus under tests/data/harbor/
// (each with its expected record and stderr), env templates, the network a
// task gets, the healthcheck wrapper and the held sandbox's end lines.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "forge_paths.h"
#include "launch/healthcheck.h"
#include "launch/network.h"
#include "sandbox/docker/stream_demux.h"
#include "sandbox/one_shot_script.h"
#include "tasks/env_template.h"
#include "tasks/harbor.h"
#include "tasks/harbor_schema.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using forge::Kind;
using forge::tasks::HarborAction;
using forge::tasks::Json;

namespace {

const fs::path kCorpus = fs::path(FORGE_SOURCE_DIR) / "tests" / "data" / "harbor";

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
  }
}

// What reading a corpus task gives, with its directory spelled $TASK: the
// record (pretty JSON, or nothing when it is refused) and the stderr lines.
std::pair<std::string, std::string> ReadCorpusTask(const fs::path& dir) {
  std::vector<std::string> warnings;
  auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), &warnings);
  std::string record = task.ok() ? task->ToJson().dump(2) + "\n" : "";
  std::string err;
  for (const auto& w : warnings) err += "warning: " + w + "\n";
  if (!task.ok()) err += "error: " + task.status().message() + "\n";
  ReplaceAll(record, dir.string(), "$TASK");
  ReplaceAll(err, dir.string(), "$TASK");
  return {record, err};
}

// A shell fragment run with /bin/sh; its exit status and stderr.
std::pair<int, std::string> RunSh(const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& arg : argv) command += forge::sandbox::ShellQuote(arg) + " ";
  command += "2>&1 >/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST_CASE("every corpus task reads to its expected record and stderr (golden files)") {
  // FORGE_UPDATE_GOLDEN=1 rewrites them; review the diff before committing.
  const bool update = std::getenv("FORGE_UPDATE_GOLDEN") != nullptr;
  int checked = 0;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    // Compose/MCP tasks keep their goldens in expected/ (compose_test.cpp).
    if (fs::exists(entry.path() / "task.toml") && !fs::exists(entry.path() / "expected")) {
      dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    CAPTURE(dir.filename().string());
    auto [record, err] = ReadCorpusTask(dir);
    if (update) {
      std::ofstream(dir / "expected.stderr") << err;
      if (record.empty()) {
        fs::remove(dir / "expected.json");
      } else {
        std::ofstream(dir / "expected.json") << record;
      }
    }
    CHECK(err == forge::testing::ReadFile(dir / "expected.stderr"));
    CHECK(record == (fs::exists(dir / "expected.json") ? forge::testing::ReadFile(dir / "expected.json") : ""));
    ++checked;
  }
  CHECK(checked >= 20);
}

TEST_CASE("every refused field has a corpus task refused with its file, line and key") {
  for (const auto& field : forge::tasks::HarborSchema()) {
    if (field.action != HarborAction::kRefuse) continue;
    std::string name(field.key);
    std::replace(name.begin(), name.end(), '.', '-');
    std::replace(name.begin(), name.end(), '_', '-');
    const fs::path dir = kCorpus / ("refused-" + name);
    CAPTURE(dir.string());
    REQUIRE(fs::exists(dir / "task.toml"));
    auto task = forge::tasks::ReadHarborTask(dir.string(), forge::testing::FakeEnv(), nullptr);
    REQUIRE_FALSE(task.ok());
    CHECK(task.status().kind() == Kind::kInvalidData);
    const std::string where = (dir / "task.toml").string() + ":";
    CHECK(task.status().message().rfind(where, 0) == 0);
    CHECK(task.status().message().find(std::string(field.key) + ": not supported by forge") != std::string::npos);
  }
}

TEST_CASE("docs/forge-tasks.md holds the field reference generated from the schema table") {
  const std::string docs = forge::testing::ReadFile(fs::path(FORGE_SOURCE_DIR) / "docs" / "forge-tasks.md");
  const std::string begin = "<!-- harbor-schema:begin (generated from lib/tasks/harbor_schema.cpp) -->\n";
  const std::string end = "<!-- harbor-schema:end -->";
  const size_t from = docs.find(begin);
  const size_t to = docs.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string table = docs.substr(from + begin.size(), to - from - begin.size());
  // On a mismatch the message shows the table to paste.
  CHECK_MESSAGE(table == forge::tasks::HarborSchemaMarkdown(), forge::tasks::HarborSchemaMarkdown());
}

TEST_CASE("the schema table has each key once, and names a record field for what it keeps") {
  std::vector<std::string> keys;
  for (const auto& field : forge::tasks::HarborSchema()) {
    keys.emplace_back(field.key);
    if (field.action == HarborAction::kWarn) CHECK_FALSE(field.record.empty());
    CHECK_FALSE(field.note.empty());
  }
  std::sort(keys.begin(), keys.end());
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
  CHECK(forge::tasks::FindHarborField("environment.mcp_servers")->handler.find("services") != std::string::npos);
}

TEST_CASE("env templates resolve ${VAR} and ${VAR:-default} from the host, as Harbor") {
  auto lookup = [](const std::string& name) -> std::optional<std::string> {
    if (name == "JUDGE_KEY") return std::string("sk-1");
    if (name == "EMPTY") return std::string();
    return std::nullopt;
  };
  std::map<std::string, std::string> env = {{"A", "${JUDGE_KEY}"},
                                            {"B", "${MISSING:-fallback}"},
                                            {"C", "Bearer ${JUDGE_KEY} / ${EMPTY:-x}"},
                                            {"D", "no template"}};
  auto resolved = forge::tasks::ResolveEnvTemplates(env, "verifier.env", lookup);
  REQUIRE(resolved.ok());
  CHECK((*resolved)["A"] == "sk-1");
  CHECK((*resolved)["B"] == "fallback");
  CHECK((*resolved)["C"] == "Bearer sk-1 / ");  // set but empty is set, as in Harbor
  CHECK((*resolved)["D"] == "no template");

  auto missing = forge::tasks::ResolveEnvTemplates({{"K", "${NOPE}"}}, "verifier.env", lookup);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().kind() == Kind::kBadConfig);
  CHECK(missing.status().message() == "verifier.env.K: environment variable 'NOPE' not found in host environment");

  for (const char* bad : {"${", "${1X}", "${A B}", "${}"}) {
    CAPTURE(bad);
    auto checked = forge::tasks::CheckEnvTemplates({{"K", bad}}, "environment.env");
    CHECK(checked.kind() == Kind::kInvalidData);
    CHECK(checked.message().rfind("environment.env.K: ", 0) == 0);
  }
}

TEST_CASE("allow_internet = false always wins over the network forge-launch would give") {
  using forge::launch::NetworkFor;
  CHECK(NetworkFor("", "", std::nullopt) == "none");
  CHECK(NetworkFor("", "http://127.0.0.1:8080", std::nullopt) == "host");
  CHECK(NetworkFor("", "http://127.0.0.1:8080", true) == "host");
  CHECK(NetworkFor("", "http://127.0.0.1:8080", false) == "proxy-only");
  CHECK(NetworkFor("host", "", false) == "none");
  CHECK(NetworkFor("host", "http://127.0.0.1:8080", false) == "proxy-only");
  CHECK(NetworkFor("loopback", "http://127.0.0.1:8080", false) == "loopback");
  CHECK(NetworkFor("proxy-only", "http://127.0.0.1:8080", false) == "proxy-only");
}

TEST_CASE("the healthcheck wrapper waits for the check, then runs the harness; gives up after its retries") {
  forge::testing::TempDir dir;
  const std::string flag = dir.File("ready");
  forge::tasks::Healthcheck check;
  check.command = "test -e " + flag;
  check.interval_sec = 1;
  check.start_interval_sec = 1;
  check.retries = 2;
  auto [failed, err] = RunSh(forge::launch::WithHealthcheck(check, {"/bin/sh", "-c", "echo ran >&2"}));
  CHECK(failed == forge::launch::kHealthcheckExit);
  CHECK(err.find("forge-healthcheck: 'test -e " + flag + "' failed 2 times in a row") != std::string::npos);
  CHECK(err.find("ran") == std::string::npos);

  // Ready after a second: the failure in the start period does not count.
  check.retries = 1;
  check.start_period_sec = 5;
  check.start_interval_sec = 2;
  const std::vector<std::string> wrapped = forge::launch::WithHealthcheck(check, {"/bin/sh", "-c", "echo ran >&2"});
  std::vector<std::string> argv = {"/bin/sh", "-c", "(sleep 1; touch " + flag + ") & exec \"$@\"", "sh"};
  argv.insert(argv.end(), wrapped.begin(), wrapped.end());
  auto [ready, text] = RunSh(argv);
  CHECK(ready == 0);
  CHECK(text == "ran\n");
}

TEST_CASE("a held sandbox's end line is watched on stdout too, so no stdout is cut") {
  auto frame = [](uint8_t stream, const std::string& payload) {
    std::string f = {static_cast<char>(stream), 0, 0, 0};
    for (int shift : {24, 16, 8, 0}) f.push_back(static_cast<char>((payload.size() >> shift) & 0xff));
    return f + payload;
  };
  forge::sandbox::docker::StreamDemux demux(1 << 20);
  demux.WatchStderr("mk ");
  demux.WatchStdout("mk");
  demux.Feed(frame(1, "a\n") + frame(2, "\nmk 0 0\n"));
  CHECK(demux.watched().has_value());
  CHECK_FALSE(demux.watched_stdout().has_value());  // stdout's own line is still to come
  demux.Feed(frame(1, "b\nc\n\nm") + frame(1, "k\n"));
  REQUIRE(demux.watched_stdout().has_value());
  CHECK(*demux.watched_stdout() == "");
  CHECK(demux.out() == "a\nb\nc\n\nmk\n");

  // The script writes stdout's end line before stderr's.
  forge::sandbox::OneShot job;
  job.exec.argv = {"true"};
  const std::string script = forge::sandbox::OneShotScript(job, "", 60, "mk-7");
  const size_t out_line = script.find("printf '\\n%s\\n' 'mk-7'\n");
  const size_t err_line = script.find("printf '\\n%s %d %d\\n' 'mk-7'");
  REQUIRE(out_line != std::string::npos);
  REQUIRE(err_line != std::string::npos);
  CHECK(out_line < err_line);
}
