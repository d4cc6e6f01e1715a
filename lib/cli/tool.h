// The conventions every forge binary follows, in one place: how a tool is
// named in its messages, how options parse, how signals stop it, and how a
// Status becomes an exit code. A tool's main builds a Tool, declares its
// options on app(), hands env() to the stage it runs (its options' env), and
// its body to Run().
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "base/status.h"
#include "cli/exit_code.h"
#include "cli/terminal_env.h"

namespace forge::cli {

// The version every binary reports; set by the build from the project version.
std::string_view Version();

class Tool {
 public:
  Tool(std::string name, std::string description);
  ~Tool();

  CLI::App& app() { return app_; }
  // The process's Env: stderr, the stop token SIGINT/SIGTERM request, the
  // clock, the environment read once.
  TerminalEnv& env() { return env_; }
  // The exit statuses --help lists (default: every code forge uses). Call
  // before adding to the footer: it replaces the footer.
  void ExitCodes(std::initializer_list<ExitCode> codes);
  const std::string& name() const { return name_; }

  // Parses argv, installs the signal handlers and runs body. Returns the exit
  // code for main to return: CLI11 parse errors are 64, a Status maps to its
  // code, a stop by SIGINT/SIGTERM to 130/143, a closed stdout to 0.
  int Run(int argc, char** argv, const std::function<Status()>& body);

 private:
  std::string name_;
  TerminalEnv env_;
  CLI::App app_;
};

// Maps a finished body's Status to the exit code, reporting the error to
// env. A stop by SIGINT or SIGTERM (env's stop token) takes precedence: the
// body is expected to have wound down because of it.
int ExitCodeFor(const Status& status, Env& env);

}  // namespace forge::cli
