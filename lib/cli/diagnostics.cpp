#include "cli/diagnostics.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace forge::cli {
namespace {

std::string& MutableToolName() {
  static std::string name = "forge";
  return name;
}

std::mutex& StderrMutex() {
  static std::mutex m;
  return m;
}

void Emit(std::string_view level, const char* color, std::string_view message) {
  std::string line = MutableToolName() + ": ";
  if (!level.empty()) {
    if (UseColor()) line += color;
    line += level;
    if (UseColor()) line += "\033[0m";
    line += ": ";
  }
  line += message;
  line += '\n';
  std::lock_guard<std::mutex> lock(StderrMutex());
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void SetToolName(std::string_view name) { MutableToolName() = std::string(name); }
const std::string& ToolName() { return MutableToolName(); }

void Error(std::string_view message) { Emit("error", "\033[1;31m", message); }
void Warn(std::string_view message) { Emit("warning", "\033[1;33m", message); }
void Note(std::string_view message) { Emit("", "", message); }

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

bool UseColor() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return StderrIsTerminal();
}

}  // namespace forge::cli
