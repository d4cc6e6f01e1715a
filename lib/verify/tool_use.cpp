#include "verify/tool_use.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

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

void CountResponse(const Json& r, RolloutToolUse& use) {
  if (!r.is_object()) return;
  auto add = [&](const Json& name) {
    if (name.is_string()) ++use.calls_by_tool[name.get<std::string>()];
  };
  if (r.contains("choices") && r["choices"].is_array()) {
    for (const auto& choice : r["choices"]) {
      const Json* calls = nullptr;
      if (choice.contains("message") && choice["message"].contains("tool_calls")) calls = &choice["message"]["tool_calls"];
      if (calls == nullptr || !calls->is_array()) continue;
      for (const auto& call : *calls) {
        if (call.contains("function") && call["function"].contains("name")) add(call["function"]["name"]);
      }
    }
  }
  if (r.contains("content") && r["content"].is_array()) {
    for (const auto& block : r["content"]) {
      if (block.is_object() && block.value("type", "") == "tool_use" && block.contains("name")) add(block["name"]);
    }
  }
  if (r.contains("output") && r["output"].is_array()) {
    for (const auto& item : r["output"]) {
      if (item.is_object() && item.value("type", "") == "function_call" && item.contains("name")) add(item["name"]);
    }
  }
}

// Walks a request's conversation, calling on_result(id, failed) for every
// tool result in it.
template <typename F>
void ForEachToolResult(const Json& request, F on_result) {
  if (!request.is_object()) return;
  auto visit_messages = [&](const Json& messages) {
    if (!messages.is_array()) return;
    for (const auto& m : messages) {
      if (!m.is_object()) continue;
      const std::string role = m.value("role", "");
      if (role == "tool") {
        on_result(m.value("tool_call_id", ""), LooksLikeToolFailure(Text(m.value("content", Json()))));
      } else if (m.contains("content") && m["content"].is_array()) {
        for (const auto& block : m["content"]) {
          if (block.is_object() && block.value("type", "") == "tool_result") {
            bool failed = block.value("is_error", false);
            on_result(block.value("tool_use_id", ""), failed);
          }
        }
      }
      if (m.value("type", "") == "function_call_output") {
        on_result(m.value("call_id", ""), LooksLikeToolFailure(Text(m.value("output", Json()))));
      }
    }
  };
  if (request.contains("messages")) visit_messages(request["messages"]);
  if (request.contains("input")) visit_messages(request["input"]);
}

}  // namespace

bool LooksLikeToolFailure(const std::string& text) {
  static const std::regex kFailure(
      R"((\berror\b|\bexception\b|\btraceback\b|\bfailed\b|command not found|exit (code|status):? *[1-9]))",
      std::regex::icase);
  std::string head = text.substr(0, 300);
  return std::regex_search(head, kFailure);
}

RolloutToolUse ToolUseOfCalls(const std::vector<store::CallRecord>& calls) {
  RolloutToolUse use;
  std::set<std::string> seen;
  int anonymous = 0;
  for (const auto& call : calls) {
    if (call.side_call) continue;
    CountResponse(call.response, use);
    ForEachToolResult(call.request, [&](const std::string& id, bool failed) {
      // A result without an id cannot be matched across requests; each is
      // counted where it first appears in the call sequence.
      std::string key = id.empty() ? "#" + std::to_string(call.seq) + ":" + std::to_string(anonymous++) : id;
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
