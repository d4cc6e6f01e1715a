// forge-verify: verify rollouts in their own sandboxes and report pass@k and pass^k.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "cli/diagnostics.h"
#include "cli/k8s_flags.h"
#include "cli/tool.h"
#include "records/jsonl.h"
#include "store/store.h"
#include "verify/commands.h"
#include "verify/runner.h"

namespace {

using forge::Status;
using forge::verify::Format;

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

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

void AddFormat(CLI::App* cmd, bool* json, bool* table) {
  cmd->add_flag("--json", *json, "Print JSON (the default when stdout is not a terminal)");
  cmd->add_flag("--table", *table, "Print a table (the default on a terminal)");
}

Format FormatOf(bool json, bool table) {
  return json ? Format::kJson : table ? Format::kTable : Format::kAuto;
}

}  // namespace

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-verify",
                        "Verify rollouts in their own sandboxes and report pass@k and pass^k.");
  CLI::App& app = tool.app();
  app.require_subcommand(1, 1);

  // run
  forge::verify::RunOptions run;
  std::string store_path = EnvOr("FORGE_STORE", "");
  run.judge.url = EnvOr("FORGE_JUDGE_URL", "");
  run.judge.default_model = EnvOr("FORGE_JUDGE_MODEL", "");
  std::string judge_key_env = "FORGE_JUDGE_API_KEY";
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Verify each rollout record (the default subcommand): attach to its held sandbox, run the "
             "task's verifier, write the record with a \"verdict\" object to stdout and the store, "
             "release the sandbox");
  run_cmd->add_option("inputs", run.inputs, "Rollout record files (JSONL; - for stdin)")->capture_default_str();
  run_cmd->add_option("--store", store_path, "forge store (SQLite) for tasks, calls and verdicts [$FORGE_STORE; ./forge.db if it exists]");
  run_cmd->add_option("--tasks", run.task_files, "Task files (JSONL) or Harbor task directories, looked up by task id");
  run_cmd->add_option("--threshold", run.threshold, "A reward at or above this passes; recorded in each verdict")
      ->capture_default_str();
  run_cmd->add_option("-j,--jobs", run.jobs, "Rollouts verified at once")->capture_default_str()->check(CLI::Range(1, 1024));
  run_cmd->add_flag("--keep", run.keep, "Keep sandboxes after verifying (for inspection)");
  run_cmd->add_option("--verifier-timeout", run.timeout_override,
                      "Seconds; replaces every task's verifier.timeout_sec (recorded in the verdict)");
  run_cmd->add_flag("--strict", run.strict, "Stop at the first malformed input line");
  run_cmd->add_flag("--require-evidence", run.require_evidence,
                    "A verifier that cannot be watched (another backend than docker, not root, a remote engine) "
                    "gives infra_error instead of an unchecked verdict");
  run_cmd->add_option("--judge-url", run.judge.url,
                      "OpenAI-compatible base URL for judge verifiers, e.g. http://127.0.0.1:8000/v1 [$FORGE_JUDGE_URL]");
  run_cmd->add_option("--judge-model", run.judge.default_model,
                      "Judge model when the task names none [$FORGE_JUDGE_MODEL]");
  run_cmd->add_option("--judge-key-env", judge_key_env, "Environment variable holding the judge's API key")
      ->capture_default_str();
  // The sandboxes of k8s rollouts: the same cluster flags as forge-launch's.
  forge::cli::AddK8sFlags(*run_cmd, run.k8s);

  // report
  forge::verify::ReportOptions report;
  bool report_json = false, report_table = false;
  CLI::App* report_cmd = app.add_subcommand(
      "report", "Per task (per group with --by) and overall: valid trials, pass@k, pass^k, mean reward, "
                "outcomes by type; with --store the agents' behaviour; with --html a page of charts");
  report_cmd->add_option("inputs", report.inputs, "Verified rollout records (JSONL; - for stdin)")->capture_default_str();
  report_cmd->add_option("-k", report.ks, "k values, comma separated (each at most every task's valid trials)")
      ->delimiter(',')->allow_extra_args(false)->capture_default_str();
  report_cmd->add_option("--by", report.by,
                         "Group by a record field (harness, model, policy_version, run_id, a.b.c); model and "
                         "policy_version come from the recorded calls when the record lacks them");
  report_cmd->add_option("--store", report.stores,
                         "forge store(s) holding the calls, for the behaviour metrics (repeatable) [$FORGE_STORE]");
  report_cmd->add_option("--html", report.html, "Also write a self-contained HTML page with the charts to FILE");
  AddFormat(report_cmd, &report_json, &report_table);

  // compare
  forge::verify::CompareOptions compare;
  bool compare_json = false, compare_table = false;
  CLI::App* compare_cmd = app.add_subcommand(
      "compare", "Run B against run A: per task and overall, the difference in pass@k and pass^k with bootstrap "
                 "intervals, tasks that flipped, and the behaviour of each run");
  compare_cmd->add_option("a", compare.a, "Verified rollout records of run A (JSONL; - for stdin)")->required();
  compare_cmd->add_option("b", compare.b, "Verified rollout records of run B (JSONL; - for stdin)")->required();
  compare_cmd->add_option("-k", compare.ks, "k values, comma separated")->delimiter(',')->capture_default_str();
  compare_cmd->add_option("--store", compare.stores, "forge store(s) holding either run's calls (repeatable) [$FORGE_STORE]");
  compare_cmd->add_option("--resamples", compare.resamples, "Bootstrap resamples")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  compare_cmd->add_option("--seed", compare.seed, "Bootstrap seed (the same seed gives the same intervals)")
      ->capture_default_str();
  compare_cmd->add_option("--confidence", compare.confidence, "Interval confidence level")
      ->capture_default_str()->check(CLI::Range(0.5, 0.999));
  compare_cmd->add_option("--html", compare.html, "Also write a self-contained HTML page with the charts to FILE");
  AddFormat(compare_cmd, &compare_json, &compare_table);

  // solvable
  forge::verify::SolvableCommandOptions solvable;
  bool solvable_json = false, solvable_table = false;
  CLI::App* solvable_cmd = app.add_subcommand(
      "solvable", "Task-construction check from oracle, no-op and model runs: flags broken_environment "
                  "(oracle fails), trivial (no-op passes), unsolved (model pass@k = 0), saturated (model pass^k = 1)");
  solvable_cmd->add_option("inputs", solvable.inputs, "Verified rollout records of all runs (JSONL; - for stdin)")
      ->capture_default_str();
  solvable_cmd->add_option("--oracle", solvable.check.oracle_harness, "Harness name of the oracle runs")->capture_default_str();
  solvable_cmd->add_option("--nop", solvable.check.nop_harness, "Harness name of the no-op runs")->capture_default_str();
  solvable_cmd->add_option("-k", solvable.check.k, "k for the model's pass@k and pass^k")->capture_default_str();
  AddFormat(solvable_cmd, &solvable_json, &solvable_table);

  // tool-use
  forge::verify::ToolUseOptions tool_use;
  tool_use.store_path = store_path;
  CLI::App* tool_use_cmd = app.add_subcommand(
      "tool-use", "Per harness, from the recorded calls: tool-use distribution and error-recovery rate "
                  "(among rollouts with a failed tool call, the share that passed)");
  tool_use_cmd->add_option("inputs", tool_use.inputs, "Verified rollout records (JSONL; - for stdin)")->capture_default_str();
  tool_use_cmd->add_option("--store", tool_use.store_path, "forge store holding the calls [$FORGE_STORE]");

  std::vector<char*> args = WithDefaultSubcommand(argc, argv);
  return tool.Run(static_cast<int>(args.size()), args.data(), [&]() -> Status {
    if (report_cmd->parsed()) {
      report.format = FormatOf(report_json, report_table);
      if (report.stores.empty() && !store_path.empty()) report.stores.push_back(store_path);
      return forge::verify::ReportCommand(report);
    }
    if (compare_cmd->parsed()) {
      compare.format = FormatOf(compare_json, compare_table);
      if (compare.stores.empty() && !store_path.empty()) compare.stores.push_back(store_path);
      return forge::verify::CompareCommand(compare);
    }
    if (solvable_cmd->parsed()) {
      solvable.format = FormatOf(solvable_json, solvable_table);
      return forge::verify::SolvableCommand(solvable);
    }
    if (tool_use_cmd->parsed()) {
      if (tool_use.store_path.empty() && access("forge.db", F_OK) == 0) tool_use.store_path = "forge.db";
      return forge::verify::ToolUseCommand(tool_use);
    }

    run.judge.api_key = EnvOr(judge_key_env.c_str(), "");
    std::unique_ptr<forge::store::Store> store;
    if (store_path.empty() && access("forge.db", F_OK) == 0) store_path = "forge.db";
    if (!store_path.empty()) {
      auto opened = forge::store::Store::Open(store_path);
      if (!opened.ok()) return opened.status().Prefixed(store_path);
      store = std::move(*opened);
    }
    forge::records::JsonlWriter out;
    forge::verify::Runner runner(run, store.get(), &out);
    forge::verify::RunSummary summary;
    Status status = runner.Run(&summary);
    if (summary.verified > 0) {
      std::string counts;
      for (const auto& [name, n] : summary.outcomes) counts += " " + name + "=" + std::to_string(n);
      forge::cli::Note("verified " + std::to_string(summary.verified) + ":" + counts);
    }
    return status;
  });
}
