// forge-verify: verify rollouts in their own sandboxes and report pass@k and pass^k.
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "cli/tool.h"
#include "forge-verify/flags.h"
#include "records/jsonl.h"
#include "store/store.h"

namespace {

using forge::Status;
using forge::tools::verify::Args;
using forge::verify::Format;

// `forge-verify FILE...` means `forge-verify run FILE...`.
std::vector<char*> WithDefaultSubcommand(int argc, char** argv) {
  static char run[] = "run";
  std::vector<char*> args(argv, argv + argc);
  const bool named = argc > 1 && (!std::strcmp(argv[1], "run") || !std::strcmp(argv[1], "report") ||
                                  !std::strcmp(argv[1], "solvable") || !std::strcmp(argv[1], "tool-use") ||
                                  !std::strcmp(argv[1], "compare") ||
                                  !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
                                  !std::strcmp(argv[1], "--version"));
  if (!named) args.insert(args.begin() + 1, run);
  return args;
}

// --json, --table, else a table on a terminal and JSON otherwise.
Format FormatOf(const Args::FormatChoice& choice) {
  if (choice.json) return Format::kJson;
  if (choice.table) return Format::kTable;
  return isatty(STDOUT_FILENO) == 1 ? Format::kTable : Format::kJson;
}

// The store given, else ./forge.db when there is one.
std::string StoreOrLocal(const std::string& given) {
  return given.empty() && access("forge.db", F_OK) == 0 ? "forge.db" : given;
}

Status Run(Args& a, forge::Env& env) {
  a.run.env = &env;
  a.run.judge.api_key = env.VarOr(a.judge_key_env, "");
  std::unique_ptr<forge::store::Store> store;
  const std::string store_path = StoreOrLocal(a.store_path);
  if (!store_path.empty()) {
    auto opened = forge::store::Store::Open(store_path);
    if (!opened.ok()) return opened.status().Prefixed(store_path);
    store = std::move(*opened);
  }
  forge::records::JsonlWriter out;
  forge::verify::Runner runner(a.run, store.get(), &out);
  forge::verify::RunSummary summary;
  Status status = runner.Run(&summary);
  if (summary.verified > 0) {
    std::string counts;
    for (const auto& [name, n] : summary.outcomes) counts += " " + name + "=" + std::to_string(n);
    env.Note("verified " + std::to_string(summary.verified) + ":" + counts);
  }
  return status;
}

Status Subcommand(Args& a, forge::Env& env) {
  if (a.report_cmd->parsed()) {
    a.report.env = &env;
    a.report.format = FormatOf(a.report_format);
    if (a.report.stores.empty() && !a.store_path.empty()) a.report.stores.push_back(a.store_path);
    return forge::verify::ReportCommand(a.report);
  }
  if (a.compare_cmd->parsed()) {
    a.compare.env = &env;
    a.compare.format = FormatOf(a.compare_format);
    if (a.compare.stores.empty() && !a.store_path.empty()) a.compare.stores.push_back(a.store_path);
    return forge::verify::CompareCommand(a.compare);
  }
  if (a.solvable_cmd->parsed()) {
    a.solvable.env = &env;
    a.solvable.format = FormatOf(a.solvable_format);
    return forge::verify::SolvableCommand(a.solvable);
  }
  if (a.tool_use_cmd->parsed()) {
    a.tool_use.env = &env;
    a.tool_use.store_path = StoreOrLocal(a.tool_use.store_path);
    return forge::verify::ToolUseCommand(a.tool_use);
  }
  return Run(a, env);
}

}  // namespace

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-verify",
                        "Verify rollouts in their own sandboxes and report pass@k and pass^k.");
  Args args;
  forge::tools::verify::DefineFlags(tool.app(), args, tool.env());
  std::vector<char*> argv_run = WithDefaultSubcommand(argc, argv);
  return tool.Run(static_cast<int>(argv_run.size()), argv_run.data(), [&] { return Subcommand(args, tool.env()); });
}
