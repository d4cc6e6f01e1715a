#include "verify/behaviour.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

namespace forge::verify {

using records::Json;

namespace {

struct ToolRow {
  const char* harness;
  const char* tool;
  ToolKind kind;
};

// Each harness's own tool names (the profiles in harnesses/; the names are
// those the pinned versions declare, plus their older or deferred ones).
constexpr ToolRow kToolTable[] = {
    // Claude Code
    {"claude-code", "Bash", ToolKind::kShell},
    {"claude-code", "BashOutput", ToolKind::kShell},
    {"claude-code", "KillShell", ToolKind::kShell},
    {"claude-code", "Read", ToolKind::kRead},
    {"claude-code", "NotebookRead", ToolKind::kRead},
    {"claude-code", "Edit", ToolKind::kEdit},
    {"claude-code", "MultiEdit", ToolKind::kEdit},
    {"claude-code", "Write", ToolKind::kEdit},
    {"claude-code", "NotebookEdit", ToolKind::kEdit},
    {"claude-code", "Grep", ToolKind::kSearch},
    {"claude-code", "Glob", ToolKind::kSearch},
    {"claude-code", "LS", ToolKind::kSearch},
    // Codex CLI
    {"codex", "exec_command", ToolKind::kShell},
    {"codex", "write_stdin", ToolKind::kShell},
    {"codex", "shell", ToolKind::kShell},
    {"codex", "local_shell", ToolKind::kShell},
    {"codex", "apply_patch", ToolKind::kEdit},
    {"codex", "view_image", ToolKind::kRead},
    {"codex", "read_file", ToolKind::kRead},
    {"codex", "list_dir", ToolKind::kSearch},
    {"codex", "grep_files", ToolKind::kSearch},
    // Gemini CLI
    {"gemini-cli", "run_shell_command", ToolKind::kShell},
    {"gemini-cli", "list_background_processes", ToolKind::kShell},
    {"gemini-cli", "read_background_output", ToolKind::kShell},
    {"gemini-cli", "read_file", ToolKind::kRead},
    {"gemini-cli", "read_many_files", ToolKind::kRead},
    {"gemini-cli", "replace", ToolKind::kEdit},
    {"gemini-cli", "write_file", ToolKind::kEdit},
    {"gemini-cli", "list_directory", ToolKind::kSearch},
    {"gemini-cli", "glob", ToolKind::kSearch},
    {"gemini-cli", "grep_search", ToolKind::kSearch},
    {"gemini-cli", "search_file_content", ToolKind::kSearch},
    // Qwen Code
    {"qwen-code", "run_shell_command", ToolKind::kShell},
    {"qwen-code", "read_file", ToolKind::kRead},
    {"qwen-code", "read_many_files", ToolKind::kRead},
    {"qwen-code", "edit", ToolKind::kEdit},
    {"qwen-code", "write_file", ToolKind::kEdit},
    {"qwen-code", "notebook_edit", ToolKind::kEdit},
    {"qwen-code", "glob", ToolKind::kSearch},
    {"qwen-code", "grep_search", ToolKind::kSearch},
    {"qwen-code", "list_directory", ToolKind::kSearch},
    // opencode
    {"opencode", "bash", ToolKind::kShell},
    {"opencode", "read", ToolKind::kRead},
    {"opencode", "edit", ToolKind::kEdit},
    {"opencode", "write", ToolKind::kEdit},
    {"opencode", "patch", ToolKind::kEdit},
    {"opencode", "multiedit", ToolKind::kEdit},
    {"opencode", "glob", ToolKind::kSearch},
    {"opencode", "grep", ToolKind::kSearch},
    {"opencode", "list", ToolKind::kSearch},
    // OpenClaw
    {"openclaw", "exec", ToolKind::kShell},
    {"openclaw", "process", ToolKind::kShell},
    {"openclaw", "read", ToolKind::kRead},
    {"openclaw", "edit", ToolKind::kEdit},
    {"openclaw", "write", ToolKind::kEdit},
    {"openclaw", "apply_patch", ToolKind::kEdit},
    {"openclaw", "ls", ToolKind::kSearch},
    // the reference ReACT loop: every answer is a shell command
    {"react", "sh", ToolKind::kShell},
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A command given as an argv array: `bash -lc X` is X, anything else its
// words joined.
std::string CommandText(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return "";
  std::vector<std::string> words;
  for (const auto& w : value) {
    if (w.is_string()) words.push_back(w.get<std::string>());
  }
  if (words.size() == 3 && (words[1] == "-c" || words[1] == "-lc")) return words[2];
  std::string joined;
  for (const auto& w : words) joined += (joined.empty() ? "" : " ") + w;
  return joined;
}

std::vector<std::string> PatchPaths(const std::string& patch) {
  static const std::regex kFile(R"(\*\*\* (Update|Add|Delete) File: ([^\n]+))");
  std::vector<std::string> paths;
  for (std::sregex_iterator it(patch.begin(), patch.end(), kFile), end; it != end; ++it) paths.push_back((*it)[2]);
  return paths;
}

// The file paths a dedicated tool's arguments name.
std::vector<std::string> PathsOf(const Json& arguments) {
  std::vector<std::string> paths;
  for (const char* key : {"file_path", "path", "filePath", "absolute_path", "file", "filename", "notebook_path",
                          "target_file"}) {
    const Json& v = JsonAt(arguments, key);
    if (v.is_string() && !v.get<std::string>().empty()) paths.push_back(v.get<std::string>());
  }
  const Json& many = JsonAt(arguments, "paths");
  if (many.is_array()) {
    for (const auto& p : many) {
      if (p.is_string()) paths.push_back(p.get<std::string>());
    }
  }
  const Json& input = JsonAt(arguments, "input");
  if (input.is_string()) {
    for (auto& p : PatchPaths(input.get<std::string>())) paths.push_back(std::move(p));
  }
  return paths;
}

// Splits a shell command at ; && || | and newlines outside quotes.
std::vector<std::string> Segments(const std::string& command) {
  std::vector<std::string> out;
  std::string cur;
  char quote = 0;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      cur += c;
    } else if (c == ';' || c == '\n' || c == '|' || (c == '&' && i + 1 < command.size() && command[i + 1] == '&')) {
      if (c == '&' || (c == '|' && i + 1 < command.size() && command[i + 1] == '|')) ++i;
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<std::string> Words(const std::string& segment) {
  std::istringstream in(segment);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The files a shell segment writes; `writes` is set when it writes something
// (cp, sed -i, ... write files whose names are not parsed).
std::vector<std::string> WrittenBy(const std::string& segment, bool* writes) {
  static const std::regex kRedirect(R"((^|[^0-9&>])>>?\s*([^\s&|;>]+))");
  static const std::regex kWriter(R"((^|\s)(sed\s+(-[a-zA-Z]*i|--in-place)|cp|mv|install|patch|apply_patch|truncate)(\s|$))");
  std::vector<std::string> paths;
  for (std::sregex_iterator it(segment.begin(), segment.end(), kRedirect), end; it != end; ++it) {
    std::string target = (*it)[2];
    if (target == "/dev/null" || target == "/dev/stdout" || target == "/dev/stderr") continue;
    paths.push_back(target);
  }
  std::vector<std::string> words = Words(segment);
  if (!words.empty() && words[0] == "tee") {
    for (size_t i = 1; i < words.size(); ++i) {
      if (words[i][0] != '-') paths.push_back(words[i]);
    }
  }
  for (auto& p : PatchPaths(segment)) paths.push_back(std::move(p));
  *writes = !paths.empty() || std::regex_search(segment, kWriter);
  return paths;
}

// A program whose run checks work: tests, a build, a script, a comparison.
bool RunsCheck(const std::vector<std::string>& words) {
  static const std::set<std::string> kChecks = {
      "pytest", "py.test", "tox", "nox", "make", "cmake", "ctest", "ninja", "meson", "gradle", "gradlew",
      "mvn", "bazel", "gcc", "g++", "clang", "clang++", "cc", "c++", "tsc", "javac", "java", "rustc",
      "node", "deno", "python", "python3", "python2", "ruby", "perl", "php", "bash", "sh", "zsh",
      "diff", "cmp", "test", "[", "jest", "mocha", "vitest", "cargo", "go", "npm", "yarn", "pnpm", "npx"};
  static const std::set<std::string> kInstalls = {"install", "i", "add", "ci", "get", "mod", "init"};
  size_t i = 0;
  while (i < words.size() && (words[i].find('=') != std::string::npos || words[i] == "sudo" ||
                              words[i] == "env" || words[i] == "time")) {
    ++i;
  }
  if (i >= words.size()) return false;
  std::string program = words[i].substr(words[i].rfind('/') == std::string::npos ? 0 : words[i].rfind('/') + 1);
  if (words[i].rfind("./", 0) == 0 || (program.size() > 3 && program.ends_with(".sh"))) return true;
  if (!kChecks.count(program)) return false;
  const bool manager = program == "cargo" || program == "go" || program == "npm" || program == "yarn" ||
                       program == "pnpm" || program == "npx";
  return !manager || (i + 1 < words.size() && !kInstalls.count(words[i + 1]));
}

bool NamesAny(const std::string& text, const std::set<std::string>& paths) {
  for (const auto& p : paths) {
    if (text.find(p) != std::string::npos) return true;
    const size_t slash = p.rfind('/');
    if (slash != std::string::npos && p.size() - slash > 3 && text.find(p.substr(slash + 1)) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Walks the calls as a sequence of edits and checks.
class VerificationTracker {
 public:
  void Edit(const std::vector<std::string>& paths) {
    edited_ = true;
    checked_ = false;
    paths_.insert(paths.begin(), paths.end());
  }
  void Check() {
    if (edited_) checked_ = true;
  }
  void Shell(const std::string& command) {
    for (const auto& segment : Segments(command)) {
      bool writes = false;
      std::vector<std::string> written = WrittenBy(segment, &writes);
      if (writes) {
        Edit(written);
      } else if (RunsCheck(Words(segment)) || NamesAny(segment, paths_)) {
        Check();
      }
    }
  }
  void Other(const Json& arguments) {
    if (NamesAny(arguments.dump(), paths_)) Check();
  }
  bool edited() const { return edited_; }
  bool checked() const { return checked_; }

 private:
  bool edited_ = false;
  bool checked_ = false;
  std::set<std::string> paths_;
};

int64_t UsageCount(const Json& usage, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const Json& v = JsonAt(usage, key);
    if (v.is_number_integer()) return v.get<int64_t>();
  }
  const Json& gemini = JsonAt(usage, "usageMetadata");
  if (gemini.is_object()) return UsageCount(gemini, keys);
  return 0;
}

void CountTurns(const std::vector<store::CallRecord>& calls, RolloutBehaviour& b) {
  for (const auto& call : calls) {
    if (call.side_call || !call.error.empty() || call.http_status >= 400) continue;
    if (b.turns++ == 0) {
      b.model = call.model;
      b.policy_version = call.policy_version_start;
    }
    b.prompt_tokens += !call.prompt_ids.empty()
                           ? static_cast<int64_t>(call.prompt_ids.size())
                           : UsageCount(call.usage, {"prompt_tokens", "input_tokens", "promptTokenCount"});
    b.completion_tokens += !call.completion_ids.empty()
                               ? static_cast<int64_t>(call.completion_ids.size())
                               : UsageCount(call.usage, {"completion_tokens", "output_tokens", "candidatesTokenCount"});
  }
}

}  // namespace

std::string_view ToolKindName(ToolKind kind) {
  switch (kind) {
    case ToolKind::kShell: return "shell";
    case ToolKind::kRead: return "read";
    case ToolKind::kEdit: return "edit";
    case ToolKind::kSearch: return "search";
    case ToolKind::kOther: break;
  }
  return "other";
}

ToolKind KindOfTool(const std::string& harness, const std::string& tool) {
  for (const auto& row : kToolTable) {
    if (harness == row.harness && tool == row.tool) return row.kind;
  }
  const std::string lower = Lower(tool);
  for (const auto& row : kToolTable) {
    if (lower == Lower(row.tool)) return row.kind;
  }
  return ToolKind::kOther;
}

std::string ShellCommandOf(const ToolCall& call, ToolKind kind) {
  if (kind != ToolKind::kShell) return "";
  for (const char* key : {"command", "cmd", "commandLine"}) {
    std::string text = CommandText(JsonAt(call.arguments, key));
    if (!text.empty()) return text;
  }
  return "";
}

RolloutBehaviour BehaviourOfCalls(const std::vector<store::CallRecord>& calls, const std::string& harness) {
  RolloutBehaviour b;
  b.tools = ToolUseOfCalls(calls, harness);
  VerificationTracker tracker;
  for (const auto& call : b.tools.calls) {
    const ToolKind kind = KindOfTool(harness, call.name);
    ++b.calls_by_kind[static_cast<size_t>(kind)];
    if (kind == ToolKind::kEdit) {
      tracker.Edit(PathsOf(call.arguments));
    } else if (kind == ToolKind::kShell) {
      tracker.Shell(ShellCommandOf(call, kind));
    } else if (kind == ToolKind::kRead || kind == ToolKind::kSearch) {
      tracker.Other(call.arguments);
    }
  }
  b.edited = tracker.edited();
  b.self_verified = tracker.checked();
  CountTurns(calls, b);
  return b;
}

void BehaviourSummary::Add(const RolloutBehaviour& b, bool passed) {
  tools.Add(b.tools, true, passed);
  for (size_t i = 0; i < kToolKinds; ++i) calls_by_kind[i] += b.calls_by_kind[i];
  if (b.edited) ++edited;
  if (b.self_verified) ++self_verified;
  turns += b.turns;
  prompt_tokens += b.prompt_tokens;
  completion_tokens += b.completion_tokens;
}

double BehaviourSummary::KindShare(ToolKind kind) const {
  return tools.tool_calls > 0 ? double(calls_by_kind[static_cast<size_t>(kind)]) / tools.tool_calls : 0;
}

std::optional<double> BehaviourSummary::SelfVerificationRate() const {
  if (edited == 0) return std::nullopt;
  return double(self_verified) / edited;
}

std::optional<double> BehaviourSummary::RecoveryRate() const {
  if (tools.rollouts_with_failures == 0) return std::nullopt;
  return double(tools.recovered) / tools.rollouts_with_failures;
}

Json BehaviourSummary::ToJson() const {
  auto optional = [](std::optional<double> v) { return v ? Json(*v) : Json(nullptr); };
  Json j = tools.ToJson();
  Json by_kind = Json::object(), share = Json::object();
  for (size_t i = 0; i < kToolKinds; ++i) {
    const auto kind = static_cast<ToolKind>(i);
    by_kind[std::string(ToolKindName(kind))] = calls_by_kind[i];
    share[std::string(ToolKindName(kind))] = KindShare(kind);
  }
  j["calls_by_kind"] = std::move(by_kind);
  j["share_by_kind"] = std::move(share);
  j["trials_with_edits"] = edited;
  j["self_verified"] = self_verified;
  j["self_verification_rate"] = optional(SelfVerificationRate());
  j["error_recovery_rate"] = optional(RecoveryRate());
  j["turns_per_trial"] = PerTrial(turns);
  j["prompt_tokens_per_trial"] = PerTrial(prompt_tokens);
  j["completion_tokens_per_trial"] = PerTrial(completion_tokens);
  return j;
}

}  // namespace forge::verify
