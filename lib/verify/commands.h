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
#include "verify/bootstrap.h"
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
  BootstrapSettings bootstrap;      // each group's intervals over its tasks
};
// report_groups.cpp.
Status ReportCommand(const ReportOptions& options);

struct CompareOptions {
  Env* env = nullptr;  // required: reports
  std::string a, b;  // verified rollout record files (- for stdin, once)
  std::vector<int64_t> ks = {1};
  std::vector<std::string> stores;
  BootstrapSettings bootstrap;
  std::string html;
  Format format = Format::kJson;
};
// compare.cpp.
Status CompareCommand(const CompareOptions& options);

// Shared by the subcommands: the trials of every verified record (and the
// records, when asked), the last verdict of each rollout id only (fold.h;
// env is told how many earlier ones were folded, and which outcomes this
// forge does not know); a record without a usable verdict is reported to env
// as file:line and skipped, and afterwards InvalidData.
Status ReadTrials(const std::vector<std::string>& inputs, Env& env, std::vector<Trial>* trials,
                  std::vector<records::Json>* records = nullptr);
// Writes text to stdout; a closed stdout is OutputClosed.
Status Print(const std::string& text);
// When a page was made, for its provenance: env's wall clock in UTC,
// e.g. "2026-12-01 10:00:00 UTC".
std::string MadeAt(const Env& env);

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
