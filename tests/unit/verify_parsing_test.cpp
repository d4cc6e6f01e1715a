#include <doctest/doctest.h>

#include "verify/judge.h"
#include "verify/reward.h"
#include "verify/runner.h"
#include "verify/tool_use.h"
#include "verify/verifiers.h"

using forge::Kind;
using forge::verify::Json;

TEST_CASE("reward.txt holds one number") {
  CHECK(forge::verify::ParseRewardTxt("1\n")->value == 1.0);
  CHECK(forge::verify::ParseRewardTxt("  0.25 \r\n")->value == 0.25);
  auto words = forge::verify::ParseRewardTxt("ok\n");
  CHECK(words.status().kind() == Kind::kInvalidData);
  CHECK(words.status().message().find("expected one number, got \"ok \"") != std::string::npos);
  CHECK_FALSE(forge::verify::ParseRewardTxt("1 2").ok());
  CHECK_FALSE(forge::verify::ParseRewardTxt("").ok());
  CHECK_FALSE(forge::verify::ParseRewardTxt("nan").ok());
  CHECK_FALSE(forge::verify::ParseRewardTxt("inf").ok());
}

TEST_CASE("reward.json holds named numbers; \"reward\" wins, else the mean") {
  auto named = forge::verify::ParseRewardJson(R"({"reward": 0.5, "style": 1})");
  REQUIRE(named.ok());
  CHECK(named->value == 0.5);
  CHECK(named->named.at("style") == 1.0);
  auto mean = forge::verify::ParseRewardJson(R"({"a": 1, "b": 0})");
  CHECK(mean->value == 0.5);
  CHECK(forge::verify::ParseRewardJson(R"({"a": "x"})").status().message().find("\"a\": expected a number") !=
        std::string::npos);
  CHECK_FALSE(forge::verify::ParseRewardJson("[1]").ok());
  CHECK_FALSE(forge::verify::ParseRewardJson("{}").ok());
  CHECK_FALSE(forge::verify::ParseRewardJson("{").ok());
}

TEST_CASE("judge replies: JSON inside prose, and the refusals") {
  auto fenced = forge::verify::ParseJudgeReply("Sure.\n```json\n{\"score\": 0.8, \"reason\": \"fine\"}\n```");
  REQUIRE(fenced.ok());
  CHECK((*fenced)["score"].get<double>() == 0.8);
  CHECK((*fenced)["reason"] == "fine");
  CHECK_FALSE(forge::verify::ParseJudgeReply("I think it is good").ok());
  CHECK_FALSE(forge::verify::ParseJudgeReply("{\"score\": 7}").ok());
  CHECK_FALSE(forge::verify::ParseJudgeReply("{\"score\": \"high\"}").ok());
  // The cache key changes with each of its parts.
  using forge::verify::Judge;
  std::string base = Judge::CacheKey("t", "m", "r", "a");
  CHECK(base == Judge::CacheKey("t", "m", "r", "a"));
  CHECK(base != Judge::CacheKey("t2", "m", "r", "a"));
  CHECK(base != Judge::CacheKey("t", "m2", "r", "a"));
  CHECK(base != Judge::CacheKey("t", "m", "r2", "a"));
  CHECK(base != Judge::CacheKey("t", "m", "r", "a2"));
}

TEST_CASE("verifier specs from task records name the bad field") {
  auto spec = forge::verify::VerifierSpecFromTask(
      Json::parse(R"({"id":"t","verifier":{"kind":"files","timeout_sec":5,"expect":[{"path":"/a","contains":"x"}]}})"), forge::testing::FakeEnv());
  REQUIRE(spec.ok());
  CHECK(spec->timeout_sec == 5);
  CHECK(*spec->expect[0].contains == "x");
  auto bad_kind = forge::verify::VerifierSpecFromTask(Json::parse(R"({"verifier":{"kind":"vibes"}})"), forge::testing::FakeEnv());
  CHECK(bad_kind.status().message().find("verifier.kind: unknown kind \"vibes\"") != std::string::npos);
  auto relative = forge::verify::VerifierSpecFromTask(Json::parse(R"({"verifier":{"kind":"files","expect":[{"path":"a"}]}})"), forge::testing::FakeEnv());
  CHECK(relative.status().message().find("verifier.expect[0].path: must be an absolute path") != std::string::npos);
  auto no_tests = forge::verify::VerifierSpecFromTask(Json::parse(R"({"verifier":{"kind":"harbor"}})"), forge::testing::FakeEnv());
  CHECK(no_tests.status().message().find("verifier.tests_dir: missing") != std::string::npos);
  auto timeout = forge::verify::VerifierSpecFromTask(Json::parse(R"({"verifier":{"kind":"command","command":"true","timeout_sec":-1}})"), forge::testing::FakeEnv());
  CHECK(timeout.status().message().find("timeout_sec") != std::string::npos);
  auto judge = forge::verify::VerifierSpecFromTask(
      Json::parse(R"({"verifier":{"kind":"judge","rubric":"r","files":["/work/a.txt"]}})"), forge::testing::FakeEnv());
  REQUIRE(judge.ok());
  CHECK(judge->kind == forge::tasks::VerifierKind::kJudge);
  CHECK(judge->files == std::vector<std::string>{"/work/a.txt"});
  auto relative_file = forge::verify::VerifierSpecFromTask(
      Json::parse(R"({"verifier":{"kind":"judge","rubric":"r","files":["a.txt"]}})"), forge::testing::FakeEnv());
  CHECK(relative_file.status().message().find("verifier.files[0]: must be an absolute path") !=
        std::string::npos);
}

namespace {

forge::store::CallRecord Call(int64_t seq, Json request, Json response) {
  forge::store::CallRecord c;
  c.seq = seq;
  c.request = std::move(request);
  c.response = std::move(response);
  return c;
}

}  // namespace

TEST_CASE("tool use: calls counted from responses, failed results once per id") {
  std::vector<forge::store::CallRecord> calls;
  Json tool_call = {{"id", "c1"}, {"type", "function"}, {"function", {{"name", "bash"}, {"arguments", "{}"}}}};
  calls.push_back(Call(0, {{"messages", Json::array({{{"role", "user"}, {"content", "go"}}})}},
                       {{"choices", Json::array({{{"message", {{"role", "assistant"}, {"tool_calls", Json::array({tool_call})}}}}})}}));
  Json history = Json::array({{{"role", "user"}, {"content", "go"}},
                              {{"role", "assistant"}, {"tool_calls", Json::array({tool_call})}},
                              {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "bash: foo: command not found"}}});
  Json tool_call2 = {{"id", "c2"}, {"type", "function"}, {"function", {{"name", "read_file"}, {"arguments", "{}"}}}};
  calls.push_back(Call(1, {{"messages", history}},
                       {{"choices", Json::array({{{"message", {{"role", "assistant"}, {"tool_calls", Json::array({tool_call2})}}}}})}}));
  Json history2 = history;
  history2.push_back({{"role", "assistant"}, {"tool_calls", Json::array({tool_call2})}});
  history2.push_back({{"role", "tool"}, {"tool_call_id", "c2"}, {"content", "hello world"}});
  calls.push_back(Call(2, {{"messages", history2}},
                       {{"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", "done: 42"}}}}})}}));
  auto use = forge::verify::ToolUseOfCalls(calls);
  CHECK(use.calls_by_tool.at("bash") == 1);
  CHECK(use.calls_by_tool.at("read_file") == 1);
  CHECK(use.tool_results == 2);  // c1 appears in two requests, counted once
  CHECK(use.failed_results == 1);
  CHECK(forge::verify::FinalAnswerFromCalls(calls) == "done: 42");

  // Anthropic: the explicit is_error flag decides, whatever the text says.
  std::vector<forge::store::CallRecord> anthropic;
  anthropic.push_back(Call(0,
      {{"messages", Json::array({{{"role", "user"}, {"content", Json::array({
          {{"type", "tool_result"}, {"tool_use_id", "t1"}, {"is_error", true}, {"content", "boom"}},
          {{"type", "tool_result"}, {"tool_use_id", "t2"}, {"content", "no error here"}}})}}})}},
      {{"content", Json::array({{{"type", "tool_use"}, {"id", "t3"}, {"name", "Edit"}, {"input", Json::object()}}})}}));
  auto a = forge::verify::ToolUseOfCalls(anthropic);
  CHECK(a.tool_results == 2);
  CHECK(a.failed_results == 1);
  CHECK(a.calls_by_tool.at("Edit") == 1);

  CHECK(forge::verify::LooksLikeToolFailure("Traceback (most recent call last):"));
  CHECK(forge::verify::LooksLikeToolFailure("exit code: 2"));
  CHECK_FALSE(forge::verify::LooksLikeToolFailure("exit code: 0"));
  CHECK_FALSE(forge::verify::LooksLikeToolFailure("wrote 3 files"));

  forge::verify::HarnessToolUse h;
  h.Add(use, true, true);
  h.Add(a, true, false);
  h.Add(a, false, false);  // an infra error does not count toward recovery
  CHECK(h.rollouts_with_failures == 2);
  CHECK(h.recovered == 1);
  CHECK(h.ToJson()["error_recovery_rate"].get<double>() == 0.5);
}

#include "support/fake_env.h"
#include "support/temp_dir.h"

TEST_CASE("tool use and the final answer read back through a real store") {
  forge::testing::TempDir dir;
  auto store = forge::store::Store::Open(dir.File("forge.db"));
  REQUIRE(store.ok());
  forge::store::RolloutRow row;
  row.id = "r1";
  row.run_id = "run";
  row.task_id = "t";
  row.status = "finished";
  REQUIRE((*store)->rollouts().Register(row).ok());
  Json call1 = {{"id", "c1"}, {"type", "function"}, {"function", {{"name", "bash"}, {"arguments", "{}"}}}};
  Json history = Json::array({{{"role", "user"}, {"content", "go"}},
                              {{"role", "assistant"}, {"tool_calls", Json::array({call1})}},
                              {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "Error: no such file"}}});
  std::vector<forge::store::CallRecord> calls;
  calls.push_back(Call(-1, {{"messages", Json::array({{{"role", "user"}, {"content", "go"}}})}},
                       {{"choices", Json::array({{{"message", {{"role", "assistant"}, {"tool_calls", Json::array({call1})}}}}})}}));
  calls.push_back(Call(-1, {{"messages", history}},
                       {{"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", "recovered"}}}}})}}));
  for (auto& c : calls) c.rollout_id = "r1";
  REQUIRE((*store)->calls().AppendCalls(calls).ok());
  auto back = (*store)->calls().CallsOfRollout("r1");
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  auto use = forge::verify::ToolUseOfCalls(*back);
  CHECK(use.calls_by_tool.at("bash") == 1);
  CHECK(use.failed_results == 1);
  CHECK(forge::verify::FinalAnswerFromCalls(*back) == "recovered");
}
