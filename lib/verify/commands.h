// The bodies of forge-verify's subcommands other than `run`: each reads
// verified rollout records (the output of `run`) and prints a summary.
// stdout gets the table or the JSON; messages go to stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "verify/bootstrap.h"
#include "verify/metrics.h"
#include "verify/solvable.h"

namespace forge::verify {

enum class Format { kAuto, kTable, kJson };

struct ReportOptions {
  std::vector<std::string> inputs = {"-"};
  std::vector<int64_t> ks = {1};
  Format format = Format::kAuto;  // auto: a table on a terminal, JSON otherwise
  std::string by;                   // group by this record field (report_groups.h)
  std::vector<std::string> stores;  // stores holding the calls, for behaviour metrics
  std::string html;                 // write the page here too
  BootstrapSettings bootstrap;      // each group's intervals over its tasks
  std::string made_at;              // when, for the page (the caller reads the clock)
};
// report_groups.cpp.
Status ReportCommand(const ReportOptions& options);

struct CompareOptions {
  std::string a, b;  // verified rollout record files (- for stdin, once)
  std::vector<int64_t> ks = {1};
  std::vector<std::string> stores;
  BootstrapSettings bootstrap;
  std::string html;
  std::string made_at;  // when, for the page (the caller reads the clock)
  Format format = Format::kAuto;
};
// compare.cpp.
Status CompareCommand(const CompareOptions& options);

// Shared by the subcommands: the trials of every verified record (and the
// records, when asked), the last verdict of each rollout id only (fold.h;
// stderr says how many earlier ones were folded, and names outcomes this
// forge does not know); a record without a usable verdict is reported as
// file:line and skipped, and afterwards InvalidData.
Status ReadTrials(const std::vector<std::string>& inputs, std::vector<Trial>* trials,
                  std::vector<records::Json>* records = nullptr);
// A table on a terminal (kAuto), else what the format says.
bool UseTable(Format format);
// Writes text to stdout; a closed stdout is OutputClosed.
Status Print(const std::string& text);

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
