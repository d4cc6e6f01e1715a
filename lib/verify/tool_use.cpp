#include "verify/tool_use.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include "base/json_field.h"

namespace forge::verify {

using records::Json;

namespace {

std::string Text(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_string()) text += part.get<std::string>();
      else if (part.is_object() && part.contains("text") && part["text"].is_string()) text += part["text"].get<std::string>();
    }
  }
  return text;
}

// Arguments as an object: the wire sends chat and Responses arguments as a
// JSON string, Anthropic and Gemini ones as an object.
Json Arguments(const Json& value) {
  if (value.is_object()) return value;
  if (!value.is_string()) return nullptr;
  Json parsed = Json::parse(value.get<std::string>(), nullptr, false);
  if (parsed.is_object()) return parsed;
  return Json{{"input", value}};  // a custom tool's free text (Codex's apply_patch)
}

void AddCall(RolloutToolUse& use, const Json& name, const Json& arguments) {
  if (!name.is_string()) return;
  use.calls.push_back({name.get<std::string>(), Arguments(arguments)});
  ++use.calls_by_tool[use.calls.back().name];
}


void ChatCalls(const Json& r, RolloutToolUse& use) {
  if (!JsonAt(r, "choices").is_array()) return;
  for (const auto& choice : r["choices"]) {
    const Json& calls = JsonAt(JsonAt(choice, "message"), "tool_calls");
    if (!calls.is_array()) continue;
    for (const auto& call : calls) AddCall(use, JsonAt(JsonAt(call, "function"), "name"), JsonAt(JsonAt(call, "function"), "arguments"));
  }
}

void AnthropicCalls(const Json& r, RolloutToolUse& use) {
  if (!JsonAt(r, "content").is_array()) return;
  for (const auto& block : r["content"]) {
    if (JsonAt(block, "type") == "tool_use") AddCall(use, JsonAt(block, "name"), JsonAt(block, "input"));
  }
}

void ResponsesCalls(const Json& r, RolloutToolUse& use) {
  if (!JsonAt(r, "output").is_array()) return;
  for (const auto& item : r["output"]) {
    const Json& type = JsonAt(item, "type");
    if (type == "function_call") AddCall(use, JsonAt(item, "name"), JsonAt(item, "arguments"));
    if (type == "custom_tool_call") AddCall(use, JsonAt(item, "name"), JsonAt(item, "input"));
    if (type == "local_shell_call") AddCall(use, Json("local_shell"), JsonAt(item, "action"));
  }
}

void GeminiCalls(const Json& r, RolloutToolUse& use) {
  if (!JsonAt(r, "candidates").is_array()) return;
  for (const auto& candidate : r["candidates"]) {
    const Json& parts = JsonAt(JsonAt(candidate, "content"), "parts");
    if (!parts.is_array()) continue;
    for (const auto& part : parts) {
      const Json& call = JsonAt(part, "functionCall");
      if (call.is_object()) AddCall(use, JsonAt(call, "name"), JsonAt(call, "args"));
    }
  }
}

// The reference ReACT harness: the first choice's text is one shell command
// unless it is DONE (a ``` fence around it is dropped, as the harness does).
void ReactCall(const Json& r, RolloutToolUse& use) {
  if (!JsonAt(r, "choices").is_array() || r["choices"].empty()) return;
  const Json& content = JsonAt(JsonAt(r["choices"][0], "message"), "content");
  if (!content.is_string()) return;
  std::string command;
  std::istringstream lines(content.get<std::string>());
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) continue;
    command += (command.empty() ? "" : "\n") + line;
  }
  while (!command.empty() && std::isspace(static_cast<unsigned char>(command.back()))) command.pop_back();
  if (command.empty() || command == "DONE" || command == "DONE.") return;
  AddCall(use, Json("sh"), Json{{"command", command}});
}

// The ReACT harness appends "[exit status N]" to every command's output.
bool ReactResultFailed(const std::string& text) {
  static const std::regex kStatus(R"(\[exit status ([0-9]+)\]\s*$)");
  std::smatch m;
  return std::regex_search(text, m, kStatus) && m[1] != "0";
}

// Walks a request's conversation, calling on_result(key, failed) for every
// tool result in it. A result without an id is keyed by its place in the
// conversation, which later requests resend unchanged.
template <typename F>
void ForEachToolResult(const Json& request, bool react, F on_result) {
  auto key = [](const std::string& id, size_t message, size_t part) {
    return id.empty() ? "#" + std::to_string(message) + ":" + std::to_string(part) : id;
  };
  auto visit_messages = [&](const Json& messages) {
    if (!messages.is_array()) return;
    for (size_t i = 0; i < messages.size(); ++i) {
      const Json& m = messages[i];
      if (!m.is_object()) continue;
      const std::string role = JsonText(m, "role");
      if (react) {
        if (role == "user" && i > 0 && JsonAt(messages[i - 1], "role") == "assistant") {
          on_result(key("", i, 0), ReactResultFailed(Text(m.value("content", Json()))));
        }
        continue;
      }
      if (role == "tool") {
        on_result(key(JsonText(m, "tool_call_id"), i, 0), LooksLikeToolFailure(Text(m.value("content", Json()))));
      } else if (m.contains("content") && m["content"].is_array()) {
        for (size_t j = 0; j < m["content"].size(); ++j) {
          const Json& block = m["content"][j];
          if (block.is_object() && JsonText(block, "type") == "tool_result") {
            on_result(key(JsonText(block, "tool_use_id"), i, j), JsonTrue(block, "is_error"));
          }
        }
      }
      const std::string type = JsonText(m, "type");
      if (type == "function_call_output" || type == "custom_tool_call_output") {
        on_result(key(JsonText(m, "call_id"), i, 0), LooksLikeToolFailure(Text(m.value("output", Json()))));
      }
    }
  };
  auto visit_contents = [&](const Json& contents) {  // Gemini
    if (!contents.is_array()) return;
    for (size_t i = 0; i < contents.size(); ++i) {
      const Json& parts = JsonAt(contents[i], "parts");
      if (!parts.is_array()) continue;
      for (size_t j = 0; j < parts.size(); ++j) {
        const Json& fr = JsonAt(parts[j], "functionResponse");
        if (!fr.is_object()) continue;
        const Json& response = JsonAt(fr, "response");
        const bool failed = response.contains("error") || LooksLikeToolFailure(Text(JsonAt(response, "output")));
        on_result(key(JsonText(fr, "id"), i, j), failed);
      }
    }
  };
  visit_messages(JsonAt(request, "messages"));
  visit_messages(JsonAt(request, "input"));
  visit_contents(JsonAt(request, "contents"));
}

}  // namespace

const Json& JsonAt(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

bool LooksLikeToolFailure(const std::string& text) {
  static const std::regex kFailure(
      R"((\berror\b|\bexception\b|\btraceback\b|\bfailed\b|command not found|exit (code|status):? *[1-9]|exited with code:? *[1-9]))",
      std::regex::icase);
  std::string head = text.substr(0, 300);
  return std::regex_search(head, kFailure);
}

RolloutToolUse ToolUseOfCalls(const std::vector<store::CallRecord>& calls, const std::string& harness) {
  RolloutToolUse use;
  const bool react = harness == kReactHarness;
  std::set<std::string> seen;
  for (const auto& call : calls) {
    if (call.side_call) continue;
    if (react) {
      ReactCall(call.response, use);
    } else {
      ChatCalls(call.response, use);
      AnthropicCalls(call.response, use);
      ResponsesCalls(call.response, use);
      GeminiCalls(call.response, use);
    }
    ForEachToolResult(call.request, react, [&](const std::string& key, bool failed) {
      if (!seen.insert(key).second) return;
      ++use.tool_results;
      if (failed) ++use.failed_results;
    });
  }
  return use;
}

void HarnessToolUse::Add(const RolloutToolUse& use, bool valid_trial, bool passed) {
  ++rollouts;
  for (const auto& [name, n] : use.calls_by_tool) {
    calls_by_tool[name] += n;
    tool_calls += n;
  }
  tool_results += use.tool_results;
  failed_results += use.failed_results;
  if (valid_trial && use.failed_results > 0) {
    ++rollouts_with_failures;
    if (passed) ++recovered;
  }
}

Json HarnessToolUse::ToJson() const {
  Json share = Json::object();
  for (const auto& [name, n] : calls_by_tool) share[name] = tool_calls > 0 ? double(n) / tool_calls : 0.0;
  Json j = {{"rollouts", rollouts},
            {"tool_calls", tool_calls},
            {"calls_by_tool", calls_by_tool},
            {"share_by_tool", share},
            {"tool_results", tool_results},
            {"failed_tool_results", failed_results},
            {"rollouts_with_failed_tool_calls", rollouts_with_failures},
            {"recovered", recovered}};
  j["error_recovery_rate"] =
      rollouts_with_failures > 0 ? Json(double(recovered) / rollouts_with_failures) : Json(nullptr);
  return j;
}

}  // namespace forge::verify
