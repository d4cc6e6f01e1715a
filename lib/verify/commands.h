// The bodies of forge-verify's subcommands other than `run`: each reads
// verified rollout records (the output of `run`) and prints a summary.
// stdout gets the table or the JSON; messages go to stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "verify/solvable.h"

namespace forge::verify {

enum class Format { kAuto, kTable, kJson };

struct ReportOptions {
  std::vector<std::string> inputs = {"-"};
  std::vector<int64_t> ks = {1};
  Format format = Format::kAuto;  // auto: a table on a terminal, JSON otherwise
};
Status ReportCommand(const ReportOptions& options);

struct SolvableCommandOptions {
  std::vector<std::string> inputs = {"-"};
  SolvableOptions check;
  Format format = Format::kAuto;
};
// Negative (exit 1) when some task is broken or trivial.
Status SolvableCommand(const SolvableCommandOptions& options);

struct ToolUseOptions {
  std::vector<std::string> inputs = {"-"};
  std::string store_path;
};
Status ToolUseCommand(const ToolUseOptions& options);

}  // namespace forge::verify
