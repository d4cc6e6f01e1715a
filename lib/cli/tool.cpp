#include "cli/tool.h"

#include <signal.h>

#include <exception>

#include "cli/signals.h"

#ifndef FORGE_VERSION
#define FORGE_VERSION "0.0.0"
#endif

namespace forge::cli {

std::string_view Version() { return FORGE_VERSION; }

Tool::Tool(std::string name, std::string description)
    : name_(std::move(name)), env_(name_), app_(std::move(description), name_) {
  app_.set_version_flag("--version", name_ + " " + std::string(Version()));
  ExitCodes({ExitCode::kNegative, ExitCode::kUsage, ExitCode::kDataErr, ExitCode::kNoInput,
             ExitCode::kUnavailable, ExitCode::kSoftware, ExitCode::kCantCreate, ExitCode::kIoErr,
             ExitCode::kTempFail, ExitCode::kProtocol, ExitCode::kConfig});
}

Tool::~Tool() { UninstallSignalHandlers(); }

namespace {

const char* ExitCodeMeaning(ExitCode code) {
  switch (code) {
    case ExitCode::kOk: return "ok";
    case ExitCode::kNegative: return "negative verdict";
    case ExitCode::kUsage: return "usage";
    case ExitCode::kDataErr: return "bad input data";
    case ExitCode::kNoInput: return "no input";
    case ExitCode::kUnavailable: return "service unavailable";
    case ExitCode::kSoftware: return "internal error";
    case ExitCode::kCantCreate: return "cannot create output";
    case ExitCode::kIoErr: return "I/O error";
    case ExitCode::kTempFail: return "temporary failure";
    case ExitCode::kProtocol: return "protocol error";
    case ExitCode::kConfig: return "configuration error";
    case ExitCode::kInterrupted: case ExitCode::kTerminated: break;
  }
  return "";
}

}  // namespace

void Tool::ExitCodes(std::initializer_list<ExitCode> codes) {
  // "0 ok" first and the stop signals last, whatever the tool lists; lines
  // wrapped at 80 columns.
  std::vector<std::string> parts{"0 ok"};
  for (ExitCode code : codes) {
    if (code == ExitCode::kOk || code == ExitCode::kInterrupted || code == ExitCode::kTerminated) continue;
    parts.push_back(std::to_string(static_cast<int>(code)) + " " + ExitCodeMeaning(code));
  }
  parts.push_back("130/143 stopped by SIGINT/SIGTERM. See " + name_ + "(1).");
  std::string footer = "Exit status:", line = footer;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string part = " " + parts[i] + (i + 1 < parts.size() ? ";" : "");
    if (line.size() + part.size() > 80) {
      footer += "\n";
      line.clear();
      part.erase(0, 1);
    }
    footer += part;
    line += part;
  }
  app_.footer(footer);
}

int ExitCodeFor(const Status& status, Env& env) {
  if (int sig = env.stop().reason(); sig == SIGINT || sig == SIGTERM) {
    if (!status.ok() && !status.Is(Kind::kCancelled) && !status.output_closed()) {
      env.Error(status.message());
    }
    return sig == SIGINT ? static_cast<int>(ExitCode::kInterrupted)
                         : static_cast<int>(ExitCode::kTerminated);
  }
  if (status.output_closed()) return 0;
  if (status.ok()) return 0;
  if (!status.Is(Kind::kNegative) && !status.message().empty()) env.Error(status.message());
  return static_cast<int>(ExitCodeOf(status.kind()));
}

namespace {

// One value per occurrence for every option: otherwise CLI11 lets a
// repeatable option swallow the positional arguments after it, and
// "--field text in.jsonl" would read stdin with two fields.
void OneValuePerOccurrence(CLI::App& app) {
  for (CLI::Option* option : app.get_options([](CLI::Option* o) { return o->nonpositional(); })) {
    option->allow_extra_args(false);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) OneValuePerOccurrence(*sub);
}

}  // namespace

int Tool::Run(int argc, char** argv, const std::function<Status()>& body) {
  OneValuePerOccurrence(app_);
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app_.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app_.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app_.exit(e);
  } catch (const CLI::ParseError& e) {
    env_.Error(e.what());
    env_.Note("try '" + name_ + " --help'");
    return static_cast<int>(ExitCode::kUsage);
  }
  InstallSignalHandlers(env_.stop());
  try {
    return ExitCodeFor(body(), env_);
  } catch (const std::exception& e) {
    env_.Error(std::string("internal error: ") + e.what());
    return static_cast<int>(ExitCode::kSoftware);
  }
}

}  // namespace forge::cli
