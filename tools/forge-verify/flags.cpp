#include "forge-verify/flags.h"

#include "common/k8s_flags.h"

namespace forge::tools::verify {
namespace {

std::vector<cli::Flag> RunFlags(Args& a) {
  forge::verify::RunOptions& run = a.run;
  return {
      {.names = "inputs", .value = "FILE", .bind = cli::Bind(run.inputs), .show_default = true,
       .help = "Rollout record files (JSONL; - for stdin)"},
      {.names = "--store", .value = "DB", .bind = cli::Bind(a.store_path),
       .help = "forge store (SQLite) for tasks, calls and verdicts [$FORGE_STORE; ./forge.db if it exists]",
       .doc = R"~(The forge store for tasks, recorded calls, judge cache and verdicts
(default
.BR $FORGE_STORE ,
else
.I ./forge.db
when it exists; without one, verdicts go to standard output only).)~"},
      {.names = "--tasks", .value = "FILE", .bind = cli::Bind(run.task_files),
       .help = "Task files (JSONL) or Harbor task directories, looked up by task id",
       .doc = R"~(Task files (JSON Lines) or Harbor task directories (or a directory of them),
read and checked as forge\-launch reads them, looked up by id. Repeatable.)~"},
      {.names = "--threshold", .value = "X", .bind = cli::Bind(run.threshold), .show_default = true,
       .help = "A reward at or above this passes; recorded in each verdict",
       .doc = "A reward at or above X passes. Recorded in every verdict."},
      {.names = "-j,--jobs", .value = "N", .bind = cli::Bind(run.jobs), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(1, 1024)); },
       .help = "Rollouts verified at once"},
      {.names = "--keep", .bind = cli::Bind(run.keep),
       .help = "Keep sandboxes after verifying (for inspection)",
       .doc = "Keep sandboxes after verifying, for inspection."},
      {.names = "--verifier-timeout", .value = "SEC", .bind = cli::Bind(run.timeout_override),
       .help = "Seconds; replaces every task's verifier.timeout_sec (recorded in the verdict)",
       .doc = "Replace every task's verifier timeout (the effective value is recorded)."},
      {.names = "--stream-timeout", .value = "SEC", .bind = cli::Bind(run.stream_timeout),
       .help = "k8s: seconds one verification's exec stream may run (default: the verifier's timeout + 120); "
               "past it the verifier is stopped in the pod",
       .doc = R"~(On
.BR "\-\-backend k8s" ,
the deadline of one verification's exec stream (default: the verifier's
timeout plus 120 s for the sweep, the upload and the answer). Past it
forge\-verify closes the stream, stops the verifier in the pod with one
.B forge\-box verify\-stop
exec, and the verdict is
.BR infra_error .)~"},
      {.names = "--strict", .bind = cli::Bind(run.strict),
       .help = "Stop at the first malformed input line"},
      {.names = "--require-evidence", .bind = cli::Bind(run.require_evidence),
       .help = "A verifier that cannot be watched (another backend than docker, not root, a remote engine) "
               "gives infra_error instead of an unchecked verdict",
       .doc = R"~(Refuse verdicts without runtime evidence: a verifier that cannot be watched
(a backend other than docker, forge\-verify not root, an engine on another host,
a storage driver other than overlay2) gives
.B infra_error
instead of a verdict with
.BR "\(dqtamper\(dq: {\(dqchecked\(dq: false}" .)~"},
      {.names = "--judge-url", .value = "URL", .bind = cli::Bind(run.judge.url),
       .help = "OpenAI-compatible base URL for judge verifiers, e.g. http://127.0.0.1:8000/v1 [$FORGE_JUDGE_URL]",
       .doc = R"~(OpenAI\-compatible base URL of the judge verifiers' model, e.g.
.I http://127.0.0.1:8000/v1
(default
.BR $FORGE_JUDGE_URL ).)~"},
      {.names = "--judge-model", .value = "NAME", .bind = cli::Bind(run.judge.default_model),
       .help = "Judge model when the task names none [$FORGE_JUDGE_MODEL]",
       .doc = R"~(The judge model when the task names none (default
.BR $FORGE_JUDGE_MODEL ).)~"},
      {.names = "--judge-key-env", .value = "VAR", .bind = cli::Bind(a.judge_key_env), .show_default = true,
       .help = "Environment variable holding the judge's API key",
       .doc = "Environment variable holding the judge's API key, sent as a Bearer token."},
  };
}

// --json and --table, for each subcommand that prints a report.
std::vector<cli::Flag> FormatFlags(Args::FormatChoice& format) {
  return {
      {.names = "--json", .bind = cli::Bind(format.json),
       .help = "Print JSON (the default when stdout is not a terminal)",
       .doc = "Print JSON (the default when standard output is not a terminal)."},
      {.names = "--table", .bind = cli::Bind(format.table),
       .help = "Print a table (the default on a terminal)"},
  };
}

// --resamples, --seed and --confidence: report's and compare's intervals.
std::vector<cli::Flag> BootstrapFlags(forge::verify::BootstrapSettings& b) {
  return {
      {.names = "--resamples", .value = "N", .bind = cli::Bind(b.resamples), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(int64_t{1}, int64_t{10000000})); },
       .help = "Bootstrap resamples"},
      {.names = "--seed", .value = "N", .bind = cli::Bind(b.seed), .show_default = true,
       .help = "Bootstrap seed (the same seed gives the same intervals)"},
      {.names = "--confidence", .value = "C", .bind = cli::Bind(b.confidence), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(0.5, 0.999)); },
       .help = "Confidence level of the intervals (compare marks a task at p <= 1 - C)",
       .doc = R"~(The intervals' confidence level, from 0.5 to 0.999: the bootstrap's, and
compare's posterior intervals'; compare marks a task when its Holm-adjusted
p is at most 1 \- C.)~"},
  };
}

std::vector<cli::Flag> ReportFlags(Args& a) {
  forge::verify::ReportOptions& report = a.report;
  return {
      {.names = "inputs", .value = "FILE", .bind = cli::Bind(report.inputs), .show_default = true,
       .help = "Verified rollout records (JSONL; - for stdin)"},
      {.names = "-k", .value = "K[,K...]", .bind = cli::Bind(report.ks), .show_default = true,
       .more = [](CLI::Option& f) { f.delimiter(',')->allow_extra_args(false); },
       .help = "k values, comma separated (each at most every task's valid trials)"},
      {.names = "--by", .value = "FIELD", .bind = cli::Bind(report.by),
       .help = "Group by a record field (harness, model, policy_version, run_id, a.b.c); model and policy_version "
               "come from the recorded calls when the record lacks them"},
      {.names = "--store", .value = "DB", .bind = cli::Bind(report.stores),
       .help = "forge store(s) holding the calls, for the behaviour metrics (repeatable) [$FORGE_STORE]",
       .doc = R"~(A forge store holding the rollouts' calls, for the behaviour metrics;
repeatable (each rollout's calls are taken from the first store that has
any) (default
.BR $FORGE_STORE ;
without one, no behaviour).)~"},
      {.names = "--html", .value = "PAGE", .bind = cli::Bind(report.html),
       .help = "Also write a self-contained HTML page with the charts to FILE",
       .doc = "Also write the HTML page (see THE PAGE) to PAGE."},
  };
}

std::vector<cli::Flag> CompareFlags(Args& a) {
  forge::verify::CompareOptions& compare = a.compare;
  return {
      {.names = "a", .value = "A", .bind = cli::Bind(compare.a),
       .more = [](CLI::Option& f) { f.required(); },
       .help = "Verified rollout records of run A (JSONL; - for stdin)"},
      {.names = "b", .value = "B", .bind = cli::Bind(compare.b),
       .more = [](CLI::Option& f) { f.required(); },
       .help = "Verified rollout records of run B (JSONL; - for stdin)"},
      {.names = "-k", .value = "K[,K...]", .bind = cli::Bind(compare.ks), .show_default = true,
       .more = [](CLI::Option& f) { f.delimiter(','); },
       .help = "k values, comma separated"},
      {.names = "--store", .value = "DB", .bind = cli::Bind(compare.stores),
       .help = "forge store(s) holding either run's calls (repeatable) [$FORGE_STORE]",
       .doc = R"~(A forge store holding either run's calls, for the behaviour metrics;
repeatable (each rollout's calls are taken from the first store that has
any, so two runs recorded by two proxies can be compared) (default
.BR $FORGE_STORE ;
without one, no behaviour).)~"},
      {.names = "--html", .value = "PAGE", .bind = cli::Bind(compare.html),
       .help = "Also write a self-contained HTML page with the charts to FILE",
       .doc = "Also write the HTML page (see THE PAGE) to PAGE."},
  };
}

std::vector<cli::Flag> SolvableFlags(Args& a) {
  forge::verify::SolvableCommandOptions& solvable = a.solvable;
  return {
      {.names = "inputs", .value = "FILE", .bind = cli::Bind(solvable.inputs), .show_default = true,
       .help = "Verified rollout records of all runs (JSONL; - for stdin)"},
      {.names = "--oracle", .value = "NAME", .bind = cli::Bind(solvable.check.oracle_harness), .show_default = true,
       .help = "Harness name of the oracle runs"},
      {.names = "--nop", .value = "NAME", .bind = cli::Bind(solvable.check.nop_harness), .show_default = true,
       .help = "Harness name of the no-op runs"},
      {.names = "-k", .value = "K", .bind = cli::Bind(solvable.check.k), .show_default = true,
       .help = "k for the model's pass@k and pass^k"},
  };
}

std::vector<cli::Flag> ToolUseFlags(Args& a) {
  return {
      {.names = "inputs", .value = "FILE", .bind = cli::Bind(a.tool_use.inputs), .show_default = true,
       .help = "Verified rollout records (JSONL; - for stdin)"},
      {.names = "--store", .value = "DB", .bind = cli::Bind(a.tool_use.store_path),
       .help = "forge store holding the calls [$FORGE_STORE]",
       .doc = R"~(The store holding the recorded calls (default
.BR $FORGE_STORE ,
else
.I ./forge.db
when it exists).)~"},
  };
}

}  // namespace

cli::FlagTable DefineFlags(CLI::App& app, Args& a, const Env& env) {
  a.store_path = env.VarOr("FORGE_STORE", "");
  a.run.judge.url = env.VarOr("FORGE_JUDGE_URL", "");
  a.run.judge.default_model = env.VarOr("FORGE_JUDGE_MODEL", "");
  a.tool_use.store_path = a.store_path;
  app.require_subcommand(1, 1);
  cli::FlagTable table;
  a.run_cmd = app.add_subcommand(
      "run", "Verify each rollout record (the default subcommand): attach to its held sandbox, run the task's "
             "verifier, write the record with a \"verdict\" object to stdout and the store, release the sandbox");
  table.Add(*a.run_cmd, "run", RunFlags(a));
  // The sandboxes of k8s rollouts: the same cluster flags as forge-launch's.
  table.Add(*a.run_cmd, kK8sSection, K8sFlags(a.run.k8s), kK8sGroup);
  a.report_cmd = app.add_subcommand(
      "report", "Per task (per group with --by) and overall: valid trials, pass@k and pass^k with bootstrap "
                "intervals over tasks, mean reward, outcomes by type; with --store the agents' behaviour; with --html "
                "a page of charts (a learning curve when the groups are policy versions)");
  table.Add(*a.report_cmd, "report", ReportFlags(a));
  table.Add(*a.report_cmd, "report", BootstrapFlags(a.report.bootstrap));
  table.Add(*a.report_cmd, "report", FormatFlags(a.report_format));
  a.compare_cmd = app.add_subcommand(
      "compare", "Run B against run A on the tasks both ran: A's and B's pass@k and pass^k and B - A, overall with "
                 "a paired bootstrap over tasks, per task with Jeffreys posterior intervals and Holm-adjusted exact "
                 "tests; tasks that flipped; the behaviour of each run");
  table.Add(*a.compare_cmd, "compare", CompareFlags(a));
  table.Add(*a.compare_cmd, "compare", BootstrapFlags(a.compare.bootstrap));
  table.Add(*a.compare_cmd, "compare", FormatFlags(a.compare_format));
  a.solvable_cmd = app.add_subcommand(
      "solvable", "Task-construction check from oracle, no-op and model runs: flags broken_environment (oracle "
                  "fails), trivial (no-op passes), unsolved (model pass@k = 0), saturated (model pass^k = 1)");
  table.Add(*a.solvable_cmd, "solvable", SolvableFlags(a));
  table.Add(*a.solvable_cmd, "solvable", FormatFlags(a.solvable_format));
  a.tool_use_cmd = app.add_subcommand(
      "tool-use", "Per harness, from the recorded calls: tool-use distribution and error-recovery rate (among "
                  "rollouts with a failed tool call, the share that passed)");
  table.Add(*a.tool_use_cmd, "tool-use", ToolUseFlags(a));
  return table;
}

}  // namespace forge::tools::verify
