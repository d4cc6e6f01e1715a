// How an agent worked, from its recorded calls, beyond whether it passed:
// which tools it reached for (a generic shell, or the harness's dedicated
// read/edit/search tools), whether it checked its work after its last edit,
// whether it still passed after a tool call failed, and how many turns and
// tokens an attempt took. Definitions (forge-verify(1) states them too):
//
// - Tool kind: each harness's own tool names map to shell, read, edit, search
//   or other (KindOfTool). A name no table knows is `other`.
// - Edit: an edit-kind tool call, or a shell command that writes a file (a
//   `>`/`>>` redirection to a file, tee, sed -i, cp, mv, patch, apply_patch).
// - Check: after the last edit, a shell command that runs tests, a build or a
//   program (pytest, make, go test, cargo, npm test, python, node, sh, diff,
//   ...), or any call (shell, read or search) naming a file the agent edited
//   ("reading back what it wrote"). A shell command that both writes a file
//   and checks (echo x > f && cat f) is an edit followed by a check.
// - Self-verification rate: among valid trials with at least one edit, the
//   share whose last edit is followed by a check.
// - Error recovery rate: among valid trials with a failed tool result
//   (tool_use.h), the share that passed.
// - Turns: model calls that are not side calls and did not fail; tokens:
//   prompt and completion tokens summed over those calls (the recorded token
//   ids, else the usage the server reported).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "records/jsonl.h"
#include "store/store.h"
#include "verify/tool_use.h"

namespace forge::verify {

enum class ToolKind { kShell, kRead, kEdit, kSearch, kOther };
inline constexpr size_t kToolKinds = 5;
std::string_view ToolKindName(ToolKind kind);

// The kind of `tool` as `harness` names it; harness tables first, then every
// known harness's names, then `other`.
ToolKind KindOfTool(const std::string& harness, const std::string& tool);

struct RolloutBehaviour {
  RolloutToolUse tools;
  std::array<int64_t, kToolKinds> calls_by_kind{};
  bool edited = false;
  bool self_verified = false;  // a check after the last edit
  int64_t turns = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  // Of the first main call: what --by model / policy_version read when the
  // record does not carry the field.
  std::string model;
  std::optional<int64_t> policy_version;
};

RolloutBehaviour BehaviourOfCalls(const std::vector<store::CallRecord>& calls, const std::string& harness);

// The shell command a tool call runs (empty when it runs none).
std::string ShellCommandOf(const ToolCall& call, ToolKind kind);

// The behaviour of a group of valid trials.
struct BehaviourSummary {
  HarnessToolUse tools;  // counts and the error-recovery rate
  std::array<int64_t, kToolKinds> calls_by_kind{};
  int64_t edited = 0;         // trials with at least one edit
  int64_t self_verified = 0;  // of those, a check after the last edit
  int64_t turns = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;

  void Add(const RolloutBehaviour& b, bool passed);
  int64_t trials() const { return tools.rollouts; }
  double KindShare(ToolKind kind) const;
  std::optional<double> SelfVerificationRate() const;
  std::optional<double> RecoveryRate() const;
  double PerTrial(int64_t total) const { return trials() > 0 ? double(total) / trials() : 0; }
  records::Json ToJson() const;
};

}  // namespace forge::verify
