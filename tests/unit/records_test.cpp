#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include "records/jsonl.h"
#include "records/schema.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

using forge::records::Json;
using forge::records::RecordKind;

namespace {

std::string WriteFile(const forge::testing::TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.File(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("a malformed line is reported and skipped while the other lines flow") {
  forge::testing::TempDir dir;
  std::string path = WriteFile(dir, "in.jsonl",
                               "{\"id\": 1}\n"
                               "{\"id\": 2, \"broken\": \n"
                               "\n"
                               "[1, 2]\n"
                               "{\"id\": 3, \"unknown\": {\"kept\": true}}\n");
  forge::testing::FakeEnv env;
  auto reader = forge::records::JsonlReader::Open(path, env);
  REQUIRE(reader.ok());
  std::vector<Json> seen;
  std::vector<size_t> lines;
  for (;;) {
    auto next = (*reader)->Next();
    REQUIRE(next.ok());
    if (!next->has_value()) break;
    seen.push_back((**next).json);
    lines.push_back((**next).line);
  }
  REQUIRE(seen.size() == 2);
  CHECK(seen[0]["id"] == 1);
  CHECK(seen[1]["id"] == 3);
  CHECK(seen[1]["unknown"]["kept"] == true);  // unknown fields pass through untouched
  CHECK(lines == std::vector<size_t>{1, 5});
  CHECK((*reader)->bad_lines() == 2);
  // Each bad line is reported as file:line: reason, and nothing else is.
  auto errors = env.Texts("error");
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].rfind(path + ":2: ", 0) == 0);
  CHECK(errors[0].find("(line skipped)") != std::string::npos);
  CHECK(errors[1] == path + ":4: expected a JSON object, got array (line skipped)");
  CHECK(env.messages().size() == 2);
}

TEST_CASE("a stop ends the input early with Cancelled, naming the input") {
  forge::testing::TempDir dir;
  std::string path = WriteFile(dir, "in.jsonl", "{\"id\": 1}\n{\"id\": 2}\n");
  forge::testing::FakeEnv env;
  auto reader = forge::records::JsonlReader::Open(path, env);
  REQUIRE(reader.ok());
  auto first = (*reader)->Next();
  REQUIRE(first.ok());
  CHECK(first->has_value());
  env.stop().Request();
  auto second = (*reader)->Next();
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().Is(forge::Kind::kCancelled));
  CHECK(second.status().message() == "stopped while reading " + path);
}

TEST_CASE("a record's text is its line as read: a CRLF line keeps its \\r") {
  forge::testing::TempDir dir;
  std::string path = WriteFile(dir, "in.jsonl", "{\"id\": 1}\r\n\r\n{\"id\":2}\n{ \"id\": 3 }");
  forge::testing::FakeEnv env;
  auto reader = forge::records::JsonlReader::Open(path, env);
  REQUIRE(reader.ok());
  std::vector<std::string> texts;
  for (;;) {
    auto next = (*reader)->Next();
    REQUIRE(next.ok());
    if (!next->has_value()) break;
    CHECK((**next).json["id"].is_number());
    texts.push_back((**next).text);
  }
  // The blank CRLF line is skipped; the last line had no ending at all.
  CHECK(texts == std::vector<std::string>{"{\"id\": 1}\r", "{\"id\":2}", "{ \"id\": 3 }"});
  CHECK((*reader)->bad_lines() == 0);
}

TEST_CASE("strict mode stops at the first bad line and names file and line") {
  forge::testing::TempDir dir;
  std::string path = WriteFile(dir, "in.jsonl", "{\"a\": 1}\nnot json\n{\"a\": 2}\n");
  forge::records::ReaderOptions options;
  options.strict = true;
  forge::testing::FakeEnv env;
  auto reader = forge::records::JsonlReader::Open(path, env, options);
  REQUIRE(reader.ok());
  auto first = (*reader)->Next();
  REQUIRE(first.ok());
  auto second = (*reader)->Next();
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().kind() == forge::Kind::kInvalidData);
  CHECK(second.status().message().rfind(path + ":2: ", 0) == 0);
  CHECK(env.messages().empty());  // returned, not reported
}

TEST_CASE("ForEachRecord reads every input and reports skipped lines at the end") {
  forge::testing::TempDir dir;
  std::string a = WriteFile(dir, "a.jsonl", "{\"n\": 1}\n{oops}\n");
  std::string b = WriteFile(dir, "b.jsonl", "{\"n\": 2}\n");
  std::vector<int> seen;
  forge::testing::FakeEnv env;
  forge::Status s = forge::records::ForEachRecord({a, b}, env, {}, [&](forge::records::Record& r) {
    seen.push_back(r.json["n"].get<int>());
    return forge::Status::Ok();
  });
  CHECK(seen == std::vector<int>{1, 2});
  CHECK(s.kind() == forge::Kind::kInvalidData);
  CHECK(s.message().find("1 malformed input line skipped") != std::string::npos);
}

TEST_CASE("a missing input file is NotFound") {
  forge::testing::FakeEnv env;
  auto reader = forge::records::JsonlReader::Open("/nonexistent/forge/input.jsonl", env);
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.status().kind() == forge::Kind::kNotFound);
}

TEST_CASE("the writer writes one compact line per record") {
  forge::testing::TempDir dir;
  std::string path = dir.File("out.jsonl");
  {
    auto writer = forge::records::JsonlWriter::Create(path);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write({{"a", 1}, {"text", "line\nbreak"}}).ok());
    REQUIRE((*writer)->Write({{"b", 2}}).ok());
  }
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  REQUIRE(lines.size() == 2);
  CHECK(Json::parse(lines[0])["text"] == "line\nbreak");
}

TEST_CASE("schemas: required fields, types and versions are checked") {
  Json rollout = {{"rollout_id", "r"}, {"run_id", "run"}, {"task_id", "t"}, {"attempt", 0},
                  {"outcome", "ok"}, {"extra", "kept"}};
  CHECK(forge::records::Validate(rollout, RecordKind::kRollout).ok());
  forge::records::Stamp(rollout, RecordKind::kRollout);
  CHECK(rollout["schema"] == "forge.rollout/1");
  CHECK(forge::records::Validate(rollout, RecordKind::kRollout).ok());
  CHECK(forge::records::DeclaredKind(rollout) == RecordKind::kRollout);

  Json missing = rollout;
  missing.erase("task_id");
  auto s = forge::records::Validate(missing, RecordKind::kRollout);
  CHECK(s.kind() == forge::Kind::kInvalidData);
  CHECK(s.message() == "rollout: missing field 'task_id'");

  Json wrong = rollout;
  wrong["attempt"] = "zero";
  CHECK(forge::records::Validate(wrong, RecordKind::kRollout).message() ==
        "rollout: field 'attempt' must be an integer, got string");

  Json future = rollout;
  future["schema"] = "forge.rollout/99";
  CHECK(forge::records::Validate(future, RecordKind::kRollout).message().find("not supported") !=
        std::string::npos);

  Json task = {{"schema", "forge.task/1"}, {"id", "t"}, {"instruction", "x"}};
  CHECK(forge::records::Validate(task, RecordKind::kRollout).message().find("expected a rollout record") !=
        std::string::npos);
}
