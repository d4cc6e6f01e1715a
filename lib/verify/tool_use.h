// What the recorded calls say about how agents use tools, beyond the
// benchmark numbers: each harness's tool-use distribution, and the
// error-recovery rate (among rollouts with at least one failed tool call,
// the share that still passed).
//
// Tool calls are read from responses (chat completions `tool_calls`,
// Anthropic `tool_use` blocks, Responses `function_call`/`custom_tool_call`
// items, Gemini `functionCall` parts). Tool results are read from the
// requests that follow; a harness resends the whole conversation, so results
// are counted once per tool-call id. A result is a failure when the wire
// format says so (Anthropic `is_error: true`) or, where it has no such flag
// (OpenAI `tool` messages, Responses `function_call_output`, Gemini
// `functionResponse`), when its first 300 characters read like one: "error",
// "exception", "traceback", "failed", "command not found", or a non-zero
// "exit code"/"exit status"/"exited with code".
//
// The reference ReACT harness (`react`) has no tool calls on the wire: each
// answer that is not DONE is one shell command, counted as a call of `sh`,
// and the user message that follows it is its result.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "records/jsonl.h"
#include "store/store.h"

namespace forge::verify {

// One tool call as the agent made it.
struct ToolCall {
  std::string name;
  records::Json arguments;  // an object (parsed when the wire sends a string); null when none
};

struct RolloutToolUse {
  std::vector<ToolCall> calls;  // in the order they were made
  std::map<std::string, int64_t> calls_by_tool;
  int64_t tool_results = 0;
  int64_t failed_results = 0;
};

// harness: the record's harness name; "react" reads plain-text commands.
RolloutToolUse ToolUseOfCalls(const std::vector<store::CallRecord>& calls, const std::string& harness = "");

// The harness name whose answers are plain-text shell commands.
inline constexpr const char* kReactHarness = "react";

// The member `key` of `object`; null when object is not an object or has none.
const records::Json& JsonAt(const records::Json& object, const char* key);

// True when a tool result without an explicit error flag reads like a failure.
bool LooksLikeToolFailure(const std::string& text);

struct HarnessToolUse {
  int64_t rollouts = 0;
  int64_t tool_calls = 0;
  std::map<std::string, int64_t> calls_by_tool;
  int64_t tool_results = 0;
  int64_t failed_results = 0;
  int64_t rollouts_with_failures = 0;  // valid trials only
  int64_t recovered = 0;               // of those, passed

  void Add(const RolloutToolUse& use, bool valid_trial, bool passed);
  records::Json ToJson() const;
};

}  // namespace forge::verify
