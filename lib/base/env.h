// What a stage needs of the process it runs in, as leveldb's Env: where to
// report to people, a stop token, a clock, and the environment variables.
// Library code reaches the terminal, the signals, the wall clock and the
// environment only through the Env in its options (LaunchOptions::env, ...);
// lib/cli implements it for a tool on a terminal (cli::TerminalEnv), the
// tests with a fake that records what was reported (tests/support/fake_env.h).
//
// Thread-safe: stages report and poll from many threads at once. The
// variables are set before a stage runs and only read while it does.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/progress.h"
#include "base/stop_token.h"

namespace forge {

class Env {
 public:
  // vars: the process's environment, read once when the tool started.
  explicit Env(std::map<std::string, std::string, std::less<>> vars = {});
  virtual ~Env();
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  // Messages for people: an error names what failed and where (a line, a
  // task, a sandbox) when the work goes on without it; a warning, something
  // the work went on despite; a note, what people should know.
  virtual void Error(std::string_view message) = 0;
  virtual void Warn(std::string_view message) = 0;
  virtual void Note(std::string_view message) = 0;
  // Text for people as it is, without the tool's prefix (a report's table).
  virtual void Text(std::string_view text) = 0;
  // A progress display for long work; total 0 means unknown.
  virtual std::unique_ptr<Progress> StartProgress(std::string label, size_t total = 0) = 0;
  // The wall clock, in seconds since the Unix epoch.
  virtual double Now() const = 0;

  // Asked to stop (SIGINT, SIGTERM, or a test): long loops poll it and waits
  // end on it.
  StopToken& stop() { return stop_; }
  const StopToken& stop() const { return stop_; }

  // An environment variable as the process had it when it started; nullopt
  // when unset.
  std::optional<std::string> Var(std::string_view name) const;
  // The variable, or fallback when it is unset or empty.
  std::string VarOr(std::string_view name, std::string_view fallback) const;

 protected:
  void SetVar(std::string name, std::string value) { vars_[std::move(name)] = std::move(value); }
  void UnsetVar(std::string_view name);

 private:
  std::map<std::string, std::string, std::less<>> vars_;
  StopToken stop_;
};

}  // namespace forge
