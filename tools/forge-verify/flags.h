// forge-verify's flags, one row each (cli/flags.h): they build its
// subcommands' command lines and the OPTIONS of man/forge-verify.1.
#pragma once

#include <string>

#include "base/env.h"
#include "cli/flags.h"
#include "verify/commands.h"
#include "verify/runner.h"

namespace forge::tools::verify {

// What the flags set; a subcommand's pointer says whether it was given.
struct Args {
  forge::verify::RunOptions run;
  std::string store_path;
  std::string judge_key_env = "FORGE_JUDGE_API_KEY";
  forge::verify::ReportOptions report;
  forge::verify::CompareOptions compare;
  forge::verify::SolvableCommandOptions solvable;
  forge::verify::ToolUseOptions tool_use;
  // --json and --table of report, compare and solvable.
  struct FormatChoice {
    bool json = false, table = false;
  } report_format, compare_format, solvable_format;
  CLI::App *run_cmd = nullptr, *report_cmd = nullptr, *compare_cmd = nullptr, *solvable_cmd = nullptr,
           *tool_use_cmd = nullptr;
};

// Defines every subcommand and flag of forge-verify on app, bound to args;
// env gives the defaults taken from the environment ($FORGE_STORE,
// $FORGE_JUDGE_URL, $FORGE_JUDGE_MODEL).
cli::FlagTable DefineFlags(CLI::App& app, Args& args, const Env& env);

}  // namespace forge::tools::verify
