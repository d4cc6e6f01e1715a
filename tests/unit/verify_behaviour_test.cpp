// Behaviour metrics (tool kinds, self-verification, error recovery, turns and
// tokens) and report --by grouping, on hand-made calls and a real store.
#include <doctest/doctest.h>

#include <fstream>

#include "store/store.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"
#include "verify/attempts.h"
#include "verify/behaviour.h"
#include "verify/report_groups.h"

namespace {

using forge::store::CallRecord;
using forge::verify::BehaviourOfCalls;
using forge::verify::KindOfTool;
using forge::verify::ToolKind;
using Json = nlohmann::json;

// A chat-completions rollout: call i answers with tool call i, and its
// request carries the results of the calls before it (results[j] the text
// of call j's result).
std::vector<CallRecord> ChatRollout(const std::vector<std::pair<std::string, Json>>& tools,
                                    const std::vector<std::string>& results = {}) {
  std::vector<CallRecord> calls;
  Json history = Json::array({{{"role", "user"}, {"content", "do it"}}});
  for (size_t i = 0; i <= tools.size(); ++i) {
    CallRecord c;
    c.rollout_id = "r";
    c.seq = static_cast<int64_t>(i);
    c.request = {{"messages", history}};
    Json message = {{"role", "assistant"}, {"content", "done"}};
    if (i < tools.size()) {
      Json call = {{"id", "c" + std::to_string(i)},
                   {"type", "function"},
                   {"function", {{"name", tools[i].first}, {"arguments", tools[i].second.dump()}}}};
      message = {{"role", "assistant"}, {"tool_calls", Json::array({call})}};
      history.push_back(message);
      history.push_back({{"role", "tool"}, {"tool_call_id", "c" + std::to_string(i)},
                         {"content", i < results.size() ? results[i] : "ok"}});
    }
    c.response = {{"choices", Json::array({{{"message", message}}})}};
    calls.push_back(std::move(c));
  }
  return calls;
}

std::vector<CallRecord> Shell(const std::string& harness_tool, const std::vector<std::string>& commands) {
  std::vector<std::pair<std::string, Json>> tools;
  for (const auto& c : commands) tools.emplace_back(harness_tool, Json{{"command", c}});
  return ChatRollout(tools);
}

}  // namespace

TEST_CASE("tool kinds follow each harness's own tool names") {
  CHECK(KindOfTool("claude-code", "Bash") == ToolKind::kShell);
  CHECK(KindOfTool("claude-code", "Read") == ToolKind::kRead);
  CHECK(KindOfTool("claude-code", "Write") == ToolKind::kEdit);
  CHECK(KindOfTool("claude-code", "Grep") == ToolKind::kSearch);
  CHECK(KindOfTool("claude-code", "WebFetch") == ToolKind::kOther);
  CHECK(KindOfTool("codex", "exec_command") == ToolKind::kShell);
  CHECK(KindOfTool("codex", "apply_patch") == ToolKind::kEdit);
  CHECK(KindOfTool("gemini-cli", "run_shell_command") == ToolKind::kShell);
  CHECK(KindOfTool("gemini-cli", "replace") == ToolKind::kEdit);
  CHECK(KindOfTool("gemini-cli", "read_file") == ToolKind::kRead);
  CHECK(KindOfTool("qwen-code", "grep_search") == ToolKind::kSearch);
  CHECK(KindOfTool("opencode", "bash") == ToolKind::kShell);
  CHECK(KindOfTool("opencode", "edit") == ToolKind::kEdit);
  CHECK(KindOfTool("openclaw", "exec") == ToolKind::kShell);
  CHECK(KindOfTool("react", "sh") == ToolKind::kShell);
  // A harness without a table: any harness's names, whatever their case.
  CHECK(KindOfTool("my-agent", "GREP") == ToolKind::kSearch);
  CHECK(KindOfTool("my-agent", "frobnicate") == ToolKind::kOther);
}

TEST_CASE("self-verification: a check after the last edit") {
  auto b = BehaviourOfCalls(ChatRollout({{"Write", {{"file_path", "/w/a.py"}, {"content", "x"}}},
                                         {"Bash", {{"command", "cd /w && python -m pytest -q"}}}}),
                            "claude-code");
  CHECK(b.edited);
  CHECK(b.self_verified);
  CHECK(b.calls_by_kind[0] == 1);  // shell
  CHECK(b.calls_by_kind[2] == 1);  // edit

  // A check before the last edit does not count.
  b = BehaviourOfCalls(ChatRollout({{"Bash", {{"command", "pytest"}}}, {"Edit", {{"file_path", "/w/a.py"}}}}),
                       "claude-code");
  CHECK(b.edited);
  CHECK_FALSE(b.self_verified);

  // Reading back what it wrote is a check; reading another file is not.
  b = BehaviourOfCalls(ChatRollout({{"Write", {{"file_path", "/w/a.txt"}}}, {"Read", {{"file_path", "/w/a.txt"}}}}),
                       "claude-code");
  CHECK(b.self_verified);
  b = BehaviourOfCalls(ChatRollout({{"Write", {{"file_path", "/w/a.txt"}}}, {"Read", {{"file_path", "/w/b.txt"}}}}),
                       "claude-code");
  CHECK_FALSE(b.self_verified);

  // No edit: nothing to verify, and it is not counted as unverified.
  b = BehaviourOfCalls(ChatRollout({{"Read", {{"file_path", "/w/a.txt"}}}}), "claude-code");
  CHECK_FALSE(b.edited);
}

TEST_CASE("self-verification through the shell: writes, read-backs and test runs") {
  auto b = BehaviourOfCalls(Shell("bash", {"echo hi > /w/h.txt", "cat /w/h.txt"}), "opencode");
  CHECK(b.edited);
  CHECK(b.self_verified);
  b = BehaviourOfCalls(Shell("bash", {"echo hi > /w/h.txt && cat /w/h.txt"}), "opencode");
  CHECK(b.self_verified);  // one command that writes, then reads back
  b = BehaviourOfCalls(Shell("bash", {"echo hi > /w/h.txt", "ls /tmp"}), "opencode");
  CHECK(b.edited);
  CHECK_FALSE(b.self_verified);
  b = BehaviourOfCalls(Shell("bash", {"make 2>&1 >/dev/null", "grep -r foo . 2>/dev/null"}), "opencode");
  CHECK_FALSE(b.edited);  // redirections to /dev/null and fds write no file
  b = BehaviourOfCalls(Shell("bash", {"sed -i s/a/b/ src/x.c", "npm install", "ls"}), "opencode");
  CHECK(b.edited);
  CHECK_FALSE(b.self_verified);  // installing is not a check
  b = BehaviourOfCalls(Shell("bash", {"sed -i s/a/b/ src/x.c", "npm test"}), "opencode");
  CHECK(b.self_verified);
  // Codex: exec_command's cmd, a patch through the shell, then a build.
  std::vector<std::pair<std::string, Json>> codex = {
      {"exec_command", {{"cmd", "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/x.c\n@@\n-a\n+b\n*** End Patch\nEOF"}}},
      {"exec_command", {{"cmd", "make -j2"}}}};
  b = BehaviourOfCalls(ChatRollout(codex), "codex");
  CHECK(b.edited);
  CHECK(b.self_verified);
}

TEST_CASE("Gemini function calls and responses are read") {
  std::vector<CallRecord> calls(2);
  calls[0].response = {{"candidates", Json::array({{{"content", {{"role", "model"}, {"parts", Json::array({
      {{"functionCall", {{"name", "write_file"}, {"args", {{"file_path", "/w/a.txt"}, {"content", "x"}}}}}}})}}}}})}};
  calls[1].request = {{"contents", Json::array({
      {{"role", "model"}, {"parts", Json::array({{{"functionCall", {{"name", "write_file"}, {"id", "w1"}}}}})}},
      {{"role", "user"}, {"parts", Json::array({{{"functionResponse", {{"id", "w1"}, {"name", "write_file"},
                                                   {"response", {{"error", "permission denied"}}}}}}})}}})}};
  calls[1].response = {{"candidates", Json::array({{{"content", {{"role", "model"}, {"parts", Json::array({
      {{"functionCall", {{"name", "run_shell_command"}, {"args", {{"command", "cat /w/a.txt"}}}}}}})}}}}})}};
  auto b = BehaviourOfCalls(calls, "gemini-cli");
  CHECK(b.tools.calls.size() == 2);
  CHECK(b.tools.failed_results == 1);
  CHECK(b.self_verified);
}

TEST_CASE("the ReACT harness: each answer is a shell command, the next user message its result") {
  auto turn = [](const std::string& content) {
    return Json{{"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", content}}}}})}};
  };
  Json history = Json::array({{{"role", "system"}, {"content", "sys"}}, {{"role", "user"}, {"content", "task"}}});
  std::vector<CallRecord> calls(3);
  calls[0].request = {{"messages", history}};
  calls[0].response = turn("printf 'hello' > /work/hello.txt");
  history.push_back({{"role", "assistant"}, {"content", "printf 'hello' > /work/hello.txt"}});
  history.push_back({{"role", "user"}, {"content", "sh: can't create /work/hello.txt: No such file\n[exit status 1]"}});
  calls[1].request = {{"messages", history}};
  calls[1].response = turn("```\ncat /work/hello.txt\n```");
  history.push_back({{"role", "assistant"}, {"content", "cat /work/hello.txt"}});
  history.push_back({{"role", "user"}, {"content", "hello\n[exit status 0]"}});
  calls[2].request = {{"messages", history}};
  calls[2].response = turn("DONE");
  auto b = BehaviourOfCalls(calls, "react");
  REQUIRE(b.tools.calls.size() == 2);
  CHECK(b.tools.calls[1].arguments["command"] == "cat /work/hello.txt");
  CHECK(b.tools.calls_by_tool.at("sh") == 2);
  CHECK(b.tools.tool_results == 2);  // the first result is resent in the third request: counted once
  CHECK(b.tools.failed_results == 1);
  CHECK(b.self_verified);
  CHECK(b.turns == 3);
}

TEST_CASE("turns and tokens: side calls and failed calls left out, usage when no ids were recorded") {
  std::vector<CallRecord> calls(4);
  calls[0].prompt_ids = {1, 2, 3, 4};
  calls[0].completion_ids = {5, 6};
  calls[0].model = "m1";
  calls[0].policy_version_start = 3;
  calls[1].side_call = true;  // a title call
  calls[1].prompt_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  calls[2].http_status = 500;
  calls[2].error = "upstream failed";
  calls[3].usage = {{"input_tokens", 10}, {"output_tokens", 3}};  // Anthropic's names
  auto b = BehaviourOfCalls(calls, "claude-code");
  CHECK(b.turns == 2);
  CHECK(b.prompt_tokens == 14);
  CHECK(b.completion_tokens == 5);
  CHECK(b.model == "m1");
  CHECK(b.policy_version == 3);
}

TEST_CASE("behaviour summary: rates over valid trials with known answers") {
  forge::verify::BehaviourSummary s;
  auto failed_then_write = BehaviourOfCalls(
      ChatRollout({{"Bash", {{"command", "ls"}}}, {"Write", {{"file_path", "/w/a"}}}}, {"bash: ls: command not found"}),
      "claude-code");
  auto verified = BehaviourOfCalls(Shell("Bash", {"echo 1 > /w/a", "cat /w/a"}), "claude-code");
  s.Add(failed_then_write, true);   // failed tool call, passed: recovered; edited, not verified
  s.Add(failed_then_write, false);  // failed tool call, failed
  s.Add(verified, false);           // edited and verified
  CHECK(s.trials() == 3);
  CHECK(s.tools.rollouts_with_failures == 2);
  CHECK(*s.RecoveryRate() == doctest::Approx(0.5));
  CHECK(s.edited == 3);
  CHECK(*s.SelfVerificationRate() == doctest::Approx(1.0 / 3));
  CHECK(s.KindShare(ToolKind::kShell) == doctest::Approx(4.0 / 6));
  CHECK(s.KindShare(ToolKind::kEdit) == doctest::Approx(2.0 / 6));
  CHECK(s.PerTrial(s.turns) == doctest::Approx(3.0));
  Json j = s.ToJson();
  CHECK(j["share_by_kind"]["shell"].get<double>() == doctest::Approx(4.0 / 6));
  CHECK(j["self_verification_rate"].get<double>() == doctest::Approx(1.0 / 3));
  forge::verify::BehaviourSummary none;
  CHECK(none.ToJson()["error_recovery_rate"].is_null());
}

TEST_CASE("FieldOf reads dotted paths; absent and null are no value") {
  Json r = {{"harness", "codex"}, {"task", {{"metadata", {{"level", 3}}}}}, {"model", nullptr}};
  CHECK(forge::verify::FieldOf(r, "harness") == "codex");
  CHECK(forge::verify::FieldOf(r, "task.metadata.level") == "3");
  CHECK_FALSE(forge::verify::FieldOf(r, "model").has_value());
  CHECK_FALSE(forge::verify::FieldOf(r, "task.nothing").has_value());
  CHECK_FALSE(forge::verify::FieldOf(r, "harness.x").has_value());
}

TEST_CASE("report --by: groups from record fields and from a store's calls") {
  forge::testing::TempDir dir;
  const std::string db = dir.File("forge.db");
  {
    auto store = forge::store::Store::Open(db);
    REQUIRE(store.ok());
    std::vector<CallRecord> calls;
    for (int i = 0; i < 6; ++i) {
      auto rollout = Shell("Bash", {"echo x > /w/f", i % 2 == 0 ? "cat /w/f" : "true"});
      for (auto& c : rollout) {
        c.rollout_id = "r" + std::to_string(i);
        c.seq = -1;
        c.model = i < 4 ? "small" : "large";
        c.policy_version_start = c.policy_version_end = i < 2 ? 2 : 10;
        c.client_format = "openai-chat";
        c.http_status = 200;
        calls.push_back(c);
      }
    }
    REQUIRE((*store)->calls().AppendCalls(calls).ok());
  }
  const std::string records = dir.File("v.jsonl");
  {
    std::ofstream out(records);
    for (int i = 0; i < 6; ++i) {
      Json r = {{"rollout_id", "r" + std::to_string(i)}, {"task_id", i % 3 == 0 ? "t1" : "t2"},
                {"harness", "claude-code"}, {"verdict", {{"outcome", i % 3 == 2 ? "failed" : "passed"}, {"reward", 1}}}};
      out << r.dump() << "\n";
    }
  }
  auto source = forge::verify::CallSource::Open({db});
  REQUIRE(source.ok());
  std::vector<forge::verify::Attempt> attempts;
  forge::testing::FakeEnv env;
  REQUIRE(forge::verify::ReadAttempts({records}, {"policy_version", &*source}, env, &attempts).ok());
  auto report = forge::verify::BuildGroupedReport(attempts, "policy_version", {1}, true);
  REQUIRE(report.ok());
  REQUIRE(report->groups.size() == 2);
  CHECK(report->groups[0].name == "2");  // numeric order: 2 before 10
  CHECK(report->groups[1].name == "10");
  CHECK(report->groups[1].report.overall.valid == 4);
  CHECK(report->groups[0].behaviour->self_verified == 1);  // r0 read back, r1 ran `true`
  CHECK(report->all.behaviour->trials() == 6);
  CHECK(report->all.behaviour->self_verified == 3);

  attempts.clear();
  REQUIRE(forge::verify::ReadAttempts({records}, {"model", &*source}, env, &attempts).ok());
  report = forge::verify::BuildGroupedReport(attempts, "model", {1}, true);
  REQUIRE(report.ok());
  CHECK(report->groups[0].name == "large");
  CHECK(report->groups[1].name == "small");
  CHECK(report->groups[1].report.overall.valid == 4);

  // Without the calls, a field the records lack is one group, "(none)".
  attempts.clear();
  REQUIRE(forge::verify::ReadAttempts({records}, {"model", nullptr}, env, &attempts).ok());
  report = forge::verify::BuildGroupedReport(attempts, "model", {1}, false);
  REQUIRE(report.ok());
  REQUIRE(report->groups.size() == 1);
  CHECK(report->groups[0].name == "(none)");
  CHECK_FALSE(report->groups[0].behaviour.has_value());

  // A k larger than a group's task's trials is refused with the group named.
  attempts.clear();
  REQUIRE(forge::verify::ReadAttempts({records}, {"policy_version", &*source}, env, &attempts).ok());
  auto refused = forge::verify::BuildGroupedReport(attempts, "policy_version", {2}, true);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("policy_version=10: k=2 is larger") != std::string::npos);
  // The curve runs to the fewest valid trials of a task (t1 has 2).
  auto whole = forge::verify::BuildGroupedReport(attempts, "", {1}, true);
  REQUIRE(whole.ok());
  CHECK(whole->all.curve.size() == 2);
  CHECK(env.messages().empty());  // every record had a verdict, none twice
}
