#include "verify/verifiers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include "base/clock.h"
#include "sandbox/box_protocol.h"
#include "sandbox/shebang.h"
#include "tasks/env_template.h"
#include "tasks/harbor.h"
#include "verify/hardening.h"
#include "verify/tracer.h"
#include "verify/watch.h"
#include "verify/reward.h"

namespace forge::verify {
namespace {

using records::Json;
namespace fs = std::filesystem;

class Stopwatch {
 public:
  double Seconds() const {
    return SecondsSince(start_);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

Verdict Start(const VerifierSpec& spec, double threshold) {
  Verdict v;
  v.verifier = std::string(tasks::VerifierKindName(spec.kind));
  v.threshold = threshold;
  v.timeout_sec = spec.timeout_sec;
  return v;
}

Verdict& Fail(Verdict& v, Outcome outcome, std::string message) {
  v.outcome = outcome;
  v.message = std::move(message);
  return v;
}

// A sandbox operation that failed for reasons of the sandbox itself (engine
// gone, container removed) is an infra error; the message says which step.
Verdict& Infra(Verdict& v, const std::string& step, const Status& status) {
  return Fail(v, Outcome::kInfraError, step + ": " + status.message());
}

}  // namespace

namespace {

Result<VerifierSpec> ReadVerifierSpec(const Json& task, const Env& env);

}  // namespace

Result<VerifierSpec> VerifierSpecFromTask(const Json& task, const Env& env) {
  auto spec = ReadVerifierSpec(task, env);
  if (!spec.ok()) return spec;
  // verifier.env's ${VAR} templates, from forge-verify's environment (as Harbor).
  auto resolved = tasks::ResolveEnvTemplates(spec->env, "verifier.env", tasks::HostEnvLookup(env));
  if (!resolved.ok()) return resolved.status();
  spec->env = std::move(*resolved);
  return spec;
}

namespace {

Result<VerifierSpec> ReadVerifierSpec(const Json& task, const Env& env) {
  if (!task.is_object()) return Status::InvalidData("task: expected an object");
  auto vit = task.find("verifier");
  if (vit == task.end() || !vit->is_object()) {
    // A Harbor task directory that names no verifier of its own: its
    // tests/test.sh is the verifier, task.toml's [verifier] sets its timeout.
    std::string dir = task.value("path", std::string());
    std::error_code ec;
    if (!dir.empty() && fs::is_regular_file(fs::path(dir) / "tests" / "test.sh", ec)) {
      std::vector<std::string> warnings;
      auto harbor = tasks::ReadHarborTask(dir, env, &warnings);
      if (!harbor.ok()) return harbor.status();
      return harbor->verifier;
    }
    return Status::InvalidData("verifier: missing (and no Harbor task directory with tests/test.sh in \"path\")");
  }
  std::string base_dir;
  for (const char* key : {"path", "source"}) {
    std::string dir = task.value(key, std::string());
    std::error_code ec;
    if (!dir.empty() && fs::is_directory(dir, ec)) {
      base_dir = dir;
      break;
    }
  }
  return tasks::VerifierFromJson(task, base_dir);
}

}  // namespace

std::string LogTail(const std::string& out, const std::string& err, size_t max_bytes) {
  auto tail = [max_bytes](const std::string& s) {
    return s.size() <= max_bytes ? s : "..." + s.substr(s.size() - max_bytes);
  };
  std::string joined;
  if (!out.empty()) joined += tail(out);
  if (!err.empty()) {
    if (!joined.empty() && joined.back() != '\n') joined += '\n';
    joined += tail(err);
  }
  return joined;
}

namespace {

// A sandbox step failed: the agent's doing when the sandbox is still there
// (hardening.h), else the infrastructure's.
Verdict& Blame(Verdict& v, sandbox::Sandbox& sandbox, const std::string& step, const Status& status) {
  std::string cause = AgentCause(sandbox, status);
  if (cause.empty()) return Infra(v, step, status);
  v.reward = 0.0;
  return Fail(v, Outcome::kFailed, step + ": " + status.message() + " (" + cause + ")");
}

// Prepares the sandbox and records what was done in v. False when the
// verifier must not run: v then holds the verdict.
bool Prepare(sandbox::Sandbox& sandbox, const VerifierSpec& spec, bool clear, const VerifyContext& context,
             Verdict& v) {
  PrepareOptions options;
  options.clear_harbor_dirs = clear;
  options.stop_processes = !spec.keep_processes;
  options.baseline = context.baseline;
  auto prepared = PrepareSandbox(sandbox, options);
  if (!prepared.ok()) {
    Infra(v, "prepare the sandbox for the verifier", prepared.status());
    return false;
  }
  v.sweep = prepared->sweep;
  if (prepared->fault.empty()) return true;
  v.reward = 0.0;
  Fail(v, Outcome::kFailed, "the agent left the sandbox unfit for its verifier: " + prepared->fault);
  return false;
}

// An earlier verification's findings (or the name-based check's that came
// before this watch), which stand.
bool EarlierTampered(const Json& earlier) {
  for (const char* key : {"findings", "toolchain"}) {
    if (earlier.contains(key) && earlier[key].is_array() && !earlier[key].empty()) return true;
  }
  return false;
}

// The runtime evidence of one verification (watch.h): started after the
// sweep and before the tests arrive, finished once the reward is read.
class Witness {
 public:
  // False when the verifier must not run: v then holds the verdict.
  bool Start(sandbox::Sandbox& sandbox, const VerifierSpec& spec, const VerifyContext& context, Verdict& v) {
    if (context.previous_tamper != nullptr && context.previous_tamper->is_object()) earlier_ = *context.previous_tamper;
    windows_ = earlier_.value("trusted_windows", Json::array());
    Status why;
    auto plan = context.watch ? PlanWatch(sandbox, context.baseline, spec.keep_processes)
                              : Result<WatchPlan>(Status::NotFound("not watched (VerifyContext::watch)"));
    if (plan.ok()) {
      for (const auto& w : windows_) {
        if (w.is_array() && w.size() == 2) plan->trusted.emplace_back(w[0].get<int64_t>(), w[1].get<int64_t>());
      }
      auto watch = Watch::Start(std::move(*plan));
      if (watch.ok()) {
        watch_ = std::move(*watch);
        return true;
      }
      why = watch.status();
    } else {
      why = plan.status();
    }
    if (why.kind() == Kind::kInvalidData || (context.require_evidence && why.kind() != Kind::kUnavailable)) {
      Fail(v, Outcome::kInfraError, "no runtime evidence can be taken: " + why.message());
      return false;
    }
    if (why.kind() == Kind::kUnavailable) {
      Infra(v, "watch the verifier", why);
      return false;
    }
    unchecked_ = {{"checked", false}, {"method", "none"}, {"why", why.message()}};
    return true;
  }

  // A one-stream verification (forge-box verify): the evidence is the
  // tracer's inside the sandbox (tracer.h), sent back in its answer.
  void StartInBox(const VerifyContext& context) {
    if (context.previous_tamper != nullptr && context.previous_tamper->is_object()) earlier_ = *context.previous_tamper;
    windows_ = earlier_.value("trusted_windows", Json::array());
    // What stays true when no answer comes back (a stop, the stream's deadline).
    const char* why = context.watch ? "forge-box verify ended before it sent its evidence" : "not traced (asked not to be)";
    unchecked_ = {{"checked", false}, {"method", "none"}, {"why", why}};
  }

  // forge-box verify's evidence section (nullopt: it sent none). Untraced
  // evidence is unchecked, and infra_error under --require-evidence (then
  // false: v holds the verdict).
  bool FromBox(const std::optional<std::string>& text, const VerifyContext& context, Verdict& v) {
    if (!text) {
      if (context.watch) unchecked_["why"] = "forge-box verify sent no evidence";
    } else if (auto r = ParseTraceReport(*text); !r) {
      unchecked_["why"] = "forge-box verify's evidence is malformed";
    } else if (!r->checked) {
      unchecked_ = {{"checked", false}, {"method", "ptrace"}, {"why", "the verifier could not be traced: " + r->why}};
    } else {
      Json findings = Json::array();
      for (const auto& f : r->findings) {
        findings.push_back({{"path", f.path}, {"pid", f.pid}, {"program", f.program}, {"why", f.why}});
      }
      traced_ = {{"checked", true},
                 {"method", "ptrace"},
                 {"t0_ns", r->t0_ns},
                 {"window", {r->start_ns, r->end_ns}},
                 {"trusted_until_ns", r->trusted_until_ns},
                 {"events", r->events},
                 {"judged", r->judged},
                 {"processes", r->processes},
                 {"unverified_paths", r->unverified},
                 {"unverified_examples", r->unverified_examples},
                 {"findings", findings},
                 {"finding_count", r->finding_count}};
      return true;
    }
    if (!context.require_evidence || !context.watch) return true;
    Fail(v, Outcome::kInfraError, "no runtime evidence can be taken: " + unchecked_.value("why", std::string()));
    return false;
  }

  // The reward file must be the verifier's own: a process of the agent's
  // program, or one the verifier does not own, wrote it otherwise.
  void CheckReward(const std::string& path) {
    if (!watch_) return;
    bool exists = false;
    std::string why = watch_->Writer(path, &exists);
    if (!why.empty()) reward_findings_.push_back({{"path", path}, {"why", why}});
  }

  // The evidence into v: tampered outranks whatever the verifier said; only
  // a stop by a signal stays what it is.
  void Finish(Verdict& v) {
    Json t = watch_ ? watch_->Finish() : !traced_.empty() ? traced_ : unchecked_;
    if (!traced_.empty()) {
      windows_.push_back({t["window"][0], t["trusted_until_ns"]});
      t["trusted_windows"] = windows_;
    }
    if (watch_) {
      for (auto& f : reward_findings_) t["findings"].push_back(f);
      t["finding_count"] = t.value("finding_count", 0) + reward_findings_.size();
      windows_.push_back({t["window"][0], t["trusted_until_ns"]});
      t["trusted_windows"] = windows_;
    }
    const bool earlier = EarlierTampered(earlier_);
    if (earlier) t["earlier"] = earlier_;
    v.tamper = t;
    const size_t found = t.value("finding_count", size_t{0});
    if ((found == 0 && !earlier) || v.outcome == Outcome::kCancelled) return;
    std::string why = earlier ? "an earlier verification of this sandbox found the agent's hand in the verifier's"
                                " machinery"
                              : t["findings"][0].value("why", std::string());
    if (found > 1) why += fmt::format(" (and {} more)", found - 1);
    const std::string verifier_said = std::string(OutcomeName(v.outcome)) + (v.message.empty() ? "" : ": " + v.message);
    v.outcome = Outcome::kTampered;
    v.message = "the agent reached into the verifier's machinery: " + why + "; the verifier said " + verifier_said;
  }

 private:
  std::unique_ptr<Watch> watch_;
  Json unchecked_ = Json::object();
  Json traced_ = Json::object();
  Json earlier_ = Json::object();
  Json windows_ = Json::array();
  Json reward_findings_ = Json::array();
};

// A sandbox where every exec is an API request and forge-box is mounted.
bool InOneStream(const sandbox::Sandbox& sandbox) { return sandbox.has_box() && sandbox.exec_is_request(); }

Verdict Done(Verdict& v, Witness& witness, const Stopwatch& clock) {
  witness.Finish(v);
  v.seconds = clock.Seconds();
  return v;
}


}  // namespace

namespace {

// Runs the verifier's command as its sandbox's own process; false when it
// did not run to its end (v then says why).
bool RunVerifier(sandbox::Sandbox& sandbox, const VerifierSpec& spec, std::vector<std::string> argv,
                 const VerifyContext& context, const std::string& what, Verdict& v, sandbox::ExecResult* out) {
  sandbox::ExecRequest req;
  req.argv = std::move(argv);
  req.env = spec.env;
  req.user = spec.user;
  req.timeout_seconds = spec.timeout_sec;
  req.cancel = context.cancel;
  auto ran = sandbox.Exec(req);
  if (!ran.ok()) {
    if (ran.status().kind() == Kind::kCancelled) Fail(v, Outcome::kCancelled, "stopped by a signal");
    else Blame(v, sandbox, "run " + what, ran.status());
    return false;
  }
  v.log_tail = LogTail(ran->stdout_data, ran->stderr_data);
  if (ran->timed_out) {
    Fail(v, Outcome::kVerifierTimeout, what + " ran past its deadline of " + std::to_string(spec.timeout_sec) + " s");
    return false;
  }
  v.exit_code = ran->exit_code;
  *out = std::move(*ran);
  return true;
}

// A reward file's content as a step of the backend reads it: NotFound when
// there is none to read (a symlink counts as none).
using RewardFetch = std::function<Result<std::string>(const std::string& path)>;

// The reward test.sh left: reward.txt, else reward.json. False when there
// is none to trust (v then says why).
bool ReadReward(sandbox::Sandbox& sandbox, const RewardFetch& fetch, int exit_code, Verdict& v, Reward* reward) {
  const std::string txt_path = std::string(kVerifierLogs) + "/reward.txt";
  const std::string json_path = std::string(kVerifierLogs) + "/reward.json";
  for (const std::string& path : {txt_path, json_path}) {
    auto text = fetch(path);
    if (!text.ok() && text.status().kind() == Kind::kNotFound) continue;
    if (!text.ok()) {
      Blame(v, sandbox, "read " + path, text.status());
      return false;
    }
    auto parsed = path == txt_path ? ParseRewardTxt(*text) : ParseRewardJson(*text);
    if (!parsed.ok()) {
      Fail(v, Outcome::kVerifierError, parsed.status().message());
      return false;
    }
    *reward = std::move(*parsed);
    return true;
  }
  Fail(v, Outcome::kVerifierError,
       "no reward file: /tests/test.sh (exit status " + std::to_string(exit_code) + ") wrote neither " + txt_path +
           " nor " + json_path);
  return false;
}

// What test.sh's end says: a reward left by one a signal ended (killed by
// the program it tested, or out of memory) is not test.sh's last word.
Verdict& JudgeReward(sandbox::Sandbox& sandbox, const RewardFetch& fetch, int exit_code, double threshold, Verdict& v) {
  if (exit_code > 128) {
    v.reward = 0.0;
    return Fail(v, Outcome::kFailed,
                fmt::format("/tests/test.sh ended by signal {} (exit status {}): a reward it left is not trusted",
                            exit_code - 128, exit_code));
  }
  Reward reward;
  if (!ReadReward(sandbox, fetch, exit_code, v, &reward)) return v;
  v.reward = reward.value;
  v.rewards = reward.named;
  v.outcome = OutcomeForReward(reward.value, threshold);
  return v;
}

// A command verifier's status: the shell's own "cannot run" statuses say
// the check itself is broken.
Verdict& JudgeCommand(int exit_code, double threshold, Verdict& v) {
  if (exit_code == 126 || exit_code == 127) {
    return Fail(v, Outcome::kVerifierError,
                "the verifier command could not run (exit status " + std::to_string(exit_code) + ")");
  }
  v.reward = exit_code == 0 ? 1.0 : 0.0;
  v.outcome = OutcomeForReward(*v.reward, threshold);
  return v;
}

// Output of forge-box verify beyond what its bounds allow: stdout and
// stderr of 1 MiB each, two reward files, the sweep's lines.
constexpr size_t kBoxOutput = 1 << 20;
constexpr size_t kBoxStreamBytes = 2 * kBoxOutput + 2 * (kMaxRewardBytes + 1) + 64 * 1024;
// The verifier's deadline is forge-box's; the stream's own allows the
// sweep, the upload and the answer on top.
constexpr double kBoxStreamSlack = 120;
// While the stream runs forge-verify sends a byte on its stdin this often;
// forge-box ends the verifier's tree when stdin ends or stays silent for
// kBoxSilence (a connection that hangs without closing).
constexpr double kBoxHeartbeat = 5;
constexpr double kBoxSilence = 30;
// The one stop exec after a stopped or timed-out stream: how long forge-box
// verify-stop waits before SIGKILL, and the exec's own bound.
constexpr double kBoxStopWait = 5;
constexpr double kBoxStopTimeout = 30;

// forge-box verify's request (box_protocol.h): the sweep's options and the
// verifier's, the command, its environment and the tests as its input.
Result<sandbox::ExecRequest> OneStreamRequest(const sandbox::Sandbox& sandbox, const VerifierSpec& spec,
                                              const VerifyContext& context, bool harbor, Preparation* prep) {
  PrepareOptions prepare;
  prepare.clear_harbor_dirs = harbor;
  prepare.stop_processes = !spec.keep_processes;
  prepare.baseline = context.baseline;
  sandbox::ExecRequest req;
  req.argv = BoxVerifyArgv(sandbox, prepare, prep);
  req.argv.insert(req.argv.end(), {"--max-output", std::to_string(kBoxOutput)});
  if (spec.timeout_sec > 0) req.argv.insert(req.argv.end(), {"--timeout", fmt::format("{}", spec.timeout_sec)});
  if (harbor) req.argv.insert(req.argv.end(), {"--shebang", "--reward", std::to_string(kMaxRewardBytes)});
  // The tracer's t0: the harness's start as forge-launch recorded it, else
  // (forge-box's default) the sandbox's start.
  if (context.baseline) req.argv.insert(req.argv.end(), {"--t0", std::to_string(context.baseline->t0_ns)});
  if (!context.watch) req.argv.push_back("--no-trace");
  req.argv.insert(req.argv.end(), {"--heartbeat", fmt::format("{}", kBoxSilence)});
  req.stdin_heartbeat_seconds = kBoxHeartbeat;
  const std::vector<std::string> command =
      harbor ? std::vector<std::string>{std::string(kTestsDir) + "/test.sh"}
             : std::vector<std::string>{"/bin/sh", "-c", spec.command};
  auto input = sandbox::VerifyInput(command, spec.env, harbor ? spec.tests_dir : "");
  if (!input.ok()) return input.status().Prefixed("pack the tests of " + spec.tests_dir);
  req.stdin_data = std::move(*input);
  req.timeout_seconds = context.stream_timeout > 0 ? context.stream_timeout
                        : spec.timeout_sec > 0    ? spec.timeout_sec + kBoxStreamSlack
                                                  : 0;
  req.max_output_bytes = kBoxStreamBytes;
  req.cancel = context.cancel;
  return req;
}

// After a stream that did not end by itself (stopped, past its deadline, or
// failed: an API error, a connection dropped mid-stream): its end need not
// reach forge-box verify in the pod (kubernetes/kubernetes#89031), so one
// bounded best-effort exec of forge-box verify-stop ends it and the
// verifier's tree (forge-box's own heartbeat bound ends them anyway). What it
// did, for the verdict's message.
std::string StopInPod(sandbox::Sandbox& sandbox, const std::string& box) {
  sandbox::ExecRequest stop;
  stop.argv = {box, "verify-stop", "--wait", fmt::format("{}", kBoxStopWait)};
  stop.timeout_seconds = kBoxStopTimeout;
  stop.max_output_bytes = 4096;
  stop.after_stop = true;
  auto ran = sandbox.Exec(stop);
  if (!ran.ok()) return "could not stop it in the pod (" + ran.status().message() + ")";
  if (ran->exit_code != 0 || ran->timed_out) {
    return fmt::format("could not stop it in the pod (forge-box verify-stop exit status {}: {})", ran->exit_code,
                       (ran->stdout_data + ran->stderr_data).substr(0, 200));
  }
  return "it was stopped in the pod";
}

// forge-box verify's own line saying it ended the verifier's tree
// (box_protocol.h), after its "forge-box: verify: "; nullopt when it did not.
std::optional<std::string> TreeEnded(const std::string& box_stderr) {
  const std::string tag = std::string(sandbox::kBoxTag) + "verify: ";
  for (size_t at = 0; at < box_stderr.size();) {
    const size_t end = std::min(box_stderr.find('\n', at), box_stderr.size());
    const std::string_view line(box_stderr.data() + at, end - at);
    if (line.starts_with(tag) && line.ends_with(sandbox::kVerifyTreeEnded)) {
      return std::string(line.substr(tag.size()));
    }
    at = end + 1;
  }
  return std::nullopt;
}

// The verifier's report from forge-box verify's answer, the sweep noted in
// v; nullopt when the verifier did not run (v then says why).
std::optional<sandbox::VerifyReport> OneStreamReport(const sandbox::Sandbox& sandbox, const sandbox::ExecResult& ran,
                                                     Preparation& prep, Verdict& v) {
  std::string sweep_lines;
  auto report = sandbox::TakeVerifyReport(ran.stdout_data, &sweep_lines);
  if (!report && (ran.exit_code == 64 || ran.exit_code == 65)) {
    Infra(v, "forge-box verify", Status::Internal("refused its input: " + ran.stderr_data.substr(0, 300)));
    return std::nullopt;
  }
  if (!report && ran.exit_code == sandbox::kVerifyBusy) {
    Infra(v, "forge-box verify",
          Status::Busy("an earlier verification in " + sandbox.handle().backend + " sandbox " + sandbox.handle().id +
                       " would not stop: " + ran.stderr_data.substr(0, 300)));
    return std::nullopt;
  }
  // forge-box ended the verifier itself (its client seemed gone: a stream
  // that hung past the heartbeat bound; or a stop signal): whatever the
  // verifier left is no verdict, and not the agent's doing.
  if (auto ended = TreeEnded(ran.stderr_data)) {
    Infra(v, "forge-box verify", Status::Unavailable(*ended));
    return std::nullopt;
  }
  NoteSweep(ParseSweepOutput(report ? sweep_lines : ran.stdout_data, report ? 0 : ran.exit_code), &prep);
  v.sweep = prep.sweep;
  if (!report && prep.fault.empty()) {
    prep.fault = fmt::format("forge-box verify ended (exit status {}{}) without its report: {}", ran.exit_code,
                             ran.timed_out ? ", past its deadline" : "", ran.stderr_data.substr(0, 300));
  }
  if (prep.fault.empty()) return report;
  v.reward = 0.0;
  Fail(v, Outcome::kFailed, "the agent left the sandbox unfit for its verifier: " + prep.fault);
  return std::nullopt;
}

// A sandbox where every exec is an API request and forge-box is mounted (a
// held pod): the sweep, the tests, the verifier and its reward in one
// forge-box verify stream, which runs nothing of the sandbox's before the
// verifier, under forge-box's tracer: its evidence comes back in the answer.
Verdict RunInOneStream(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                       const VerifyContext& context, bool harbor) {
  Stopwatch clock;
  Verdict v = Start(spec, threshold);
  Witness witness;
  witness.StartInBox(context);
  if (!spec.user.empty()) {
    Infra(v, "run the verifier",
          Status::InvalidArgument("the " + sandbox.handle().backend + " backend runs the verifier as the sandbox's "
                                  "own user; verifier.user " + spec.user + " cannot be honoured"));
    return Done(v, witness, clock);
  }
  Preparation prep;
  auto req = OneStreamRequest(sandbox, spec, context, harbor, &prep);
  if (!req.ok()) return Done(Fail(v, Outcome::kVerifierError, req.status().message()), witness, clock);
  auto ran = sandbox.Exec(*req);
  if (!ran.ok()) {
    if (ran.status().kind() == Kind::kCancelled) {
      Fail(v, Outcome::kCancelled, "stopped by a signal; " + StopInPod(sandbox, req->argv[0]));
    } else {
      // Whether forge-box verify started in the pod is not known here (an
      // upgrade's answer can be lost after the kubelet ran it): stop it too.
      const std::string stopped = StopInPod(sandbox, req->argv[0]);
      Blame(v, sandbox, "run forge-box verify", ran.status());
      v.message += "; " + stopped;
    }
    return Done(v, witness, clock);
  }
  if (ran->timed_out) {
    Infra(v, "run forge-box verify",
          Status::Unavailable(fmt::format("its stream ran past its deadline of {} s; {}", req->timeout_seconds,
                                          StopInPod(sandbox, req->argv[0]))));
    return Done(v, witness, clock);
  }
  auto report = OneStreamReport(sandbox, *ran, prep, v);
  if (!report) return Done(v, witness, clock);
  if (!witness.FromBox(report->evidence, context, v)) return Done(v, witness, clock);
  v.log_tail = LogTail(report->stdout_data, report->stderr_data);
  if (report->timed_out) {
    const std::string what = harbor ? "/tests/test.sh" : "the verifier command";
    Fail(v, Outcome::kVerifierTimeout, what + " ran past its deadline of " + std::to_string(spec.timeout_sec) + " s");
    return Done(v, witness, clock);
  }
  v.exit_code = report->exit_code;
  if (!harbor) return Done(JudgeCommand(report->exit_code, threshold, v), witness, clock);
  const RewardFetch fetch = [&](const std::string& path) -> Result<std::string> {
    const auto& text = path.ends_with(".txt") ? report->reward_txt : report->reward_json;
    if (!text) return Status::NotFound(path + ": no such regular file");
    if (text->size() > kMaxRewardBytes) {
      return Status::InvalidData(path + ": larger than " + std::to_string(kMaxRewardBytes) + " bytes");
    }
    return *text;
  };
  return Done(JudgeReward(sandbox, fetch, report->exit_code, threshold, v), witness, clock);
}

}  // namespace

Verdict RunHarbor(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                  const VerifyContext& context) {
  Stopwatch clock;
  Verdict v = Start(spec, threshold);
  Witness witness;
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(spec.tests_dir) / "test.sh", ec)) {
    v.seconds = clock.Seconds();
    return Fail(v, Outcome::kVerifierError, spec.tests_dir + "/test.sh: missing on the host");
  }
  if (InOneStream(sandbox)) return RunInOneStream(sandbox, spec, threshold, context, true);

  // Whatever the agent left in /tests or /logs/verifier (a planted reward.txt,
  // a doctored test, a directory it made unreadable) is moved aside before
  // the real tests arrive, and no process of the agent's is left to write
  // there again. The watch starts before the tests arrive: forge's upload is
  // then a write of this verification's.
  if (!Prepare(sandbox, spec, true, context, v) || !witness.Start(sandbox, spec, context, v)) {
    return Done(v, witness, clock);
  }
  if (Status copied = sandbox.CopyIn(spec.tests_dir, kTestsDir); !copied.ok()) {
    Blame(v, sandbox, std::string("upload tests to ") + kTestsDir, copied);
    return Done(v, witness, clock);
  }
  // By its shebang, as Harbor runs it; without one, under sh.
  sandbox::ExecResult ran;
  if (!RunVerifier(sandbox, spec, sandbox::RunByShebang(std::string(kTestsDir) + "/test.sh"), context,
                   "/tests/test.sh", v, &ran)) {
    return Done(v, witness, clock);
  }
  // Read through the engine's archive endpoint (docker): a symlink is read
  // as a symlink, never followed, and counts as no reward file. The file
  // must be the verifier's own: the witness checks its writer before and
  // after it is read.
  const RewardFetch fetch = [&](const std::string& path) -> Result<std::string> {
    witness.CheckReward(path);
    auto text = sandbox.ReadFile(path, kMaxRewardBytes);
    if (text.ok()) witness.CheckReward(path);
    return text;
  };
  return Done(JudgeReward(sandbox, fetch, ran.exit_code, threshold, v), witness, clock);
}

Verdict RunCommand(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                   const VerifyContext& context) {
  if (InOneStream(sandbox)) return RunInOneStream(sandbox, spec, threshold, context, false);
  Stopwatch clock;
  Verdict v = Start(spec, threshold);
  Witness witness;
  if (!Prepare(sandbox, spec, false, context, v) || !witness.Start(sandbox, spec, context, v)) {
    return Done(v, witness, clock);
  }
  sandbox::ExecResult ran;
  if (!RunVerifier(sandbox, spec, {"/bin/sh", "-c", spec.command}, context, "the verifier command", v, &ran)) {
    return Done(v, witness, clock);
  }
  return Done(JudgeCommand(ran.exit_code, threshold, v), witness, clock);
}

Verdict RunFiles(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold) {
  Stopwatch clock;
  Verdict v = Start(spec, threshold);
  Json checks = Json::array();
  int held = 0;
  for (const auto& check : spec.expect) {
    Json c = {{"path", check.path}};
    auto content = sandbox.ReadFile(check.path, 16 << 20);
    if (!content.ok()) {
      if (content.status().kind() != Kind::kNotFound) {
        v.seconds = clock.Seconds();
        return Infra(v, "read " + check.path, content.status());
      }
      c["ok"] = false;
      c["why"] = "missing";
    } else if (check.equals && *content != *check.equals) {
      c["ok"] = false;
      c["why"] = "content differs";
    } else if (check.contains && content->find(*check.contains) == std::string::npos) {
      c["ok"] = false;
      c["why"] = "text not found";
    } else {
      c["ok"] = true;
      ++held;
    }
    checks.push_back(std::move(c));
  }
  v.seconds = clock.Seconds();
  v.details["checks"] = std::move(checks);
  v.reward = static_cast<double>(held) / spec.expect.size();
  v.outcome = OutcomeForReward(*v.reward, threshold);
  return v;
}

}  // namespace forge::verify
