// forge::Env for a tool run from a shell: messages on stderr prefixed with the
// tool's name ("forge-launch: warning: ..."), coloured only on a terminal and
// without NO_COLOR, so they never mix with the JSON Lines on stdout; progress
// drawn only when stderr is a terminal; the process's environment read once,
// here; the stop token requested by SIGINT/SIGTERM once Tool::Run has
// installed the signal handlers.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "base/env.h"

namespace forge::cli {

class TerminalEnv : public Env {
 public:
  // Reads the process's environment.
  explicit TerminalEnv(std::string tool_name);
  // With these variables instead (forge-man: the defaults of a bare shell).
  TerminalEnv(std::string tool_name, std::map<std::string, std::string, std::less<>> vars);

  void Error(std::string_view message) override;
  void Warn(std::string_view message) override;
  void Note(std::string_view message) override;
  void Text(std::string_view text) override;
  std::unique_ptr<Progress> StartProgress(std::string label, size_t total = 0) override;
  double Now() const override;

  const std::string& tool_name() const { return tool_name_; }

 private:
  void Emit(std::string_view level, const char* color, std::string_view message);

  std::string tool_name_;
  bool color_;
  bool stderr_is_terminal_;
  std::mutex stderr_mutex_;
};

}  // namespace forge::cli
