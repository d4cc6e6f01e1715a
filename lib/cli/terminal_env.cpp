#include "cli/terminal_env.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "cli/progress.h"

extern char** environ;

namespace forge::cli {
namespace {

std::map<std::string, std::string, std::less<>> ProcessEnvironment() {
  std::map<std::string, std::string, std::less<>> vars;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    vars.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return vars;
}

}  // namespace

TerminalEnv::TerminalEnv(std::string tool_name) : TerminalEnv(std::move(tool_name), ProcessEnvironment()) {}

TerminalEnv::TerminalEnv(std::string tool_name, std::map<std::string, std::string, std::less<>> vars)
    : Env(std::move(vars)),
      tool_name_(std::move(tool_name)),
      stderr_is_terminal_(isatty(STDERR_FILENO) == 1) {
  // Colour only on a terminal and only when NO_COLOR is unset or empty.
  color_ = stderr_is_terminal_ && VarOr("NO_COLOR", "").empty();
}

void TerminalEnv::Emit(std::string_view level, const char* color, std::string_view message) {
  std::string line = tool_name_ + ": ";
  if (!level.empty()) {
    if (color_) line += color;
    line += level;
    if (color_) line += "\033[0m";
    line += ": ";
  }
  line += message;
  line += '\n';
  Text(line);
}

void TerminalEnv::Error(std::string_view message) { Emit("error", "\033[1;31m", message); }
void TerminalEnv::Warn(std::string_view message) { Emit("warning", "\033[1;33m", message); }
void TerminalEnv::Note(std::string_view message) { Emit("", "", message); }

void TerminalEnv::Text(std::string_view text) {
  std::lock_guard<std::mutex> lock(stderr_mutex_);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

std::unique_ptr<Progress> TerminalEnv::StartProgress(std::string label, size_t total) {
  return std::make_unique<TerminalProgress>(tool_name_, std::move(label), total, stderr_is_terminal_);
}

double TerminalEnv::Now() const {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace forge::cli
