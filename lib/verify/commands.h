// The bodies of forge-verify's subcommands other than `run`: each reads
// verified rollout records (the output of `run`) and prints a summary.
// stdout gets the table or the JSON; messages go to the options' Env.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "records/jsonl.h"
#include "verify/metrics.h"
#include "verify/solvable.h"

namespace forge::verify {

// forge-verify prints a table on a terminal and JSON otherwise, unless told.
enum class Format { kTable, kJson };

struct ReportOptions {
  Env* env = nullptr;  // required: reports
  std::vector<std::string> inputs = {"-"};
  std::vector<int64_t> ks = {1};
  Format format = Format::kJson;
  std::string by;                   // group by this record field (report_groups.h)
  std::vector<std::string> stores;  // stores holding the calls, for behaviour metrics
  std::string html;                 // write the page here too
};
Status ReportCommand(const ReportOptions& options);
// report with --by, --store or --html (report_groups.cpp).
Status GroupedReportCommand(const ReportOptions& options);

struct CompareOptions {
  Env* env = nullptr;  // required: reports
  std::string a, b;  // verified rollout record files (- for stdin, once)
  std::vector<int64_t> ks = {1};
  std::vector<std::string> stores;
  int64_t resamples = 10000;
  uint64_t seed = 1;
  double confidence = 0.95;
  std::string html;
  Format format = Format::kJson;
};
// compare.cpp.
Status CompareCommand(const CompareOptions& options);

// Shared by the subcommands: the trials of every verified record (and the
// records, when asked), the last verdict of each rollout id only (fold.h;
// *folded, when given, says how many earlier ones were dropped); a record
// without a usable verdict is reported to env as file:line and skipped, and
// afterwards InvalidData.
Status ReadTrials(const std::vector<std::string>& inputs, Env& env, std::vector<Trial>* trials,
                  std::vector<records::Json>* records = nullptr, size_t* folded = nullptr);
// Warns how many duplicate verdicts ReadTrials folded, if any.
void WarnIfFolded(size_t folded, Env& env);
// Writes text to stdout; a closed stdout is OutputClosed.
Status Print(const std::string& text);

struct SolvableCommandOptions {
  Env* env = nullptr;  // required: reports
  std::vector<std::string> inputs = {"-"};
  SolvableOptions check;
  Format format = Format::kJson;
};
// Negative (exit 1) when some task is broken or trivial.
Status SolvableCommand(const SolvableCommandOptions& options);

struct ToolUseOptions {
  Env* env = nullptr;  // required: reports
  std::vector<std::string> inputs = {"-"};
  std::string store_path;
};
Status ToolUseCommand(const ToolUseOptions& options);

}  // namespace forge::verify
