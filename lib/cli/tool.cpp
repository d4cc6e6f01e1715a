#include "cli/tool.h"

#include <signal.h>

#include <exception>

#include "cli/diagnostics.h"
#include "cli/signals.h"

#ifndef FORGE_VERSION
#define FORGE_VERSION "0.0.0"
#endif

namespace forge::cli {

std::string_view Version() { return FORGE_VERSION; }

Tool::Tool(std::string name, std::string description)
    : name_(std::move(name)), app_(std::move(description), name_) {
  SetToolName(name_);
  app_.set_version_flag("--version", name_ + " " + std::string(Version()));
  app_.footer("Exit status: 0 ok; 1 negative verdict; 64 usage; 65 bad input data; 66 no input;\n"
              "69 service unavailable; 70 internal error; 73 cannot create output; 74 I/O error;\n"
              "75 temporary failure; 76 protocol error; 78 configuration error; 130/143 stopped by\n"
              "SIGINT/SIGTERM. See " + name_ + "(1).");
}

int ExitCodeFor(const Status& status) {
  if (int sig = StopSignal(); sig == SIGINT || sig == SIGTERM) {
    if (!status.ok() && status.code() != ExitCode::kInterrupted && !status.output_closed()) {
      Error(status.message());
    }
    return sig == SIGINT ? static_cast<int>(ExitCode::kInterrupted)
                         : static_cast<int>(ExitCode::kTerminated);
  }
  if (status.output_closed()) return 0;
  if (status.ok()) return 0;
  if (status.code() != ExitCode::kNegative && !status.message().empty()) Error(status.message());
  return static_cast<int>(status.code());
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
    Error(e.what());
    Note("try '" + name_ + " --help'");
    return static_cast<int>(ExitCode::kUsage);
  }
  InstallSignalHandlers();
  try {
    return ExitCodeFor(body());
  } catch (const std::exception& e) {
    Error(std::string("internal error: ") + e.what());
    return static_cast<int>(ExitCode::kSoftware);
  }
}

}  // namespace forge::cli
