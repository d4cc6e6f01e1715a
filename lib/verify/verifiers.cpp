#include "verify/verifiers.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/clock.h"
#include "sandbox/shebang.h"
#include "tasks/env_template.h"
#include "tasks/harbor.h"
#include "verify/hardening.h"
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
bool Prepare(sandbox::Sandbox& sandbox, const VerifierSpec& spec, const std::string& script, bool clear,
             const Json* previous_tamper, Verdict& v, Preparation* prep) {
  PrepareOptions options;
  options.clear_harbor_dirs = clear;
  options.stop_processes = !spec.keep_processes;
  options.script = script;
  options.previous_tamper = previous_tamper;
  auto prepared = PrepareSandbox(sandbox, options);
  if (!prepared.ok()) {
    Infra(v, "prepare the sandbox for the verifier", prepared.status());
    return false;
  }
  *prep = std::move(*prepared);
  v.sweep = prep->sweep;
  v.tamper = prep->tamper;
  if (prep->fault.empty()) return true;
  v.reward = 0.0;
  Fail(v, Outcome::kFailed, "the agent left the sandbox unfit for its verifier: " + prep->fault);
  return false;
}

// Evidence of tampering outranks whatever the verifier said; only a stop by
// a signal stays what it is.
Verdict Finish(Verdict& v, const Preparation& prep, const Stopwatch& clock) {
  v.seconds = clock.Seconds();
  if (prep.tampered && v.outcome != Outcome::kCancelled) {
    std::string paths;
    for (const auto& change : prep.tamper.value("toolchain", Json::array())) {
      if (paths.size() > 200) break;
      paths += (paths.empty() ? "" : ", ") + change.value("path", std::string()) + " " +
               change.value("kind", std::string());
    }
    const std::string verifier_said = std::string(OutcomeName(v.outcome)) + (v.message.empty() ? "" : ": " + v.message);
    v.outcome = Outcome::kTampered;
    v.message = "the agent changed the verifier's toolchain (" + paths + "); the verifier said " + verifier_said;
  }
  return v;
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Verdict RunHarbor(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                  const StopToken* cancel, const Json* previous_tamper) {
  Stopwatch clock;
  Verdict v = Start(spec, threshold);
  Preparation prep;
  std::error_code ec;
  const std::string test_sh = (fs::path(spec.tests_dir) / "test.sh").string();
  if (!fs::is_regular_file(test_sh, ec)) {
    v.seconds = clock.Seconds();
    return Fail(v, Outcome::kVerifierError, spec.tests_dir + "/test.sh: missing on the host");
  }

  // Whatever the agent left in /tests or /logs/verifier (a planted reward.txt,
  // a doctored test, a directory it made unreadable) is moved aside before
  // the real tests arrive, and no process of the agent's is left to write
  // there again.
  if (!Prepare(sandbox, spec, ReadHostFile(test_sh), true, previous_tamper, v, &prep)) return Finish(v, prep, clock);
  if (Status copied = sandbox.CopyIn(spec.tests_dir, kTestsDir); !copied.ok()) {
    Blame(v, sandbox, std::string("upload tests to ") + kTestsDir, copied);
    return Finish(v, prep, clock);
  }

  // By its shebang, as Harbor runs it; without one, under sh.
  sandbox::ExecRequest test;
  test.argv = sandbox::RunByShebang(std::string(kTestsDir) + "/test.sh");
  test.env = spec.env;
  test.user = spec.user;
  test.timeout_seconds = spec.timeout_sec;
  test.cancel = cancel;
  auto ran = sandbox.Exec(test);
  if (!ran.ok()) {
    if (ran.status().kind() == Kind::kCancelled) Fail(v, Outcome::kCancelled, "stopped by a signal");
    else Blame(v, sandbox, "run /tests/test.sh", ran.status());
    return Finish(v, prep, clock);
  }
  v.log_tail = LogTail(ran->stdout_data, ran->stderr_data);
  if (ran->timed_out) {
    Fail(v, Outcome::kVerifierTimeout,
         "/tests/test.sh ran past its deadline of " + std::to_string(spec.timeout_sec) + " s");
    return Finish(v, prep, clock);
  }
  v.exit_code = ran->exit_code;

  // Read through the engine's archive endpoint (docker): a symlink is read
  // as a symlink, never followed, and counts as no reward file. The
  // directory was empty when test.sh started and nothing of the agent's ran
  // beside it, so whatever is there, test.sh wrote.
  const std::string txt_path = std::string(kVerifierLogs) + "/reward.txt";
  const std::string json_path = std::string(kVerifierLogs) + "/reward.json";
  Result<Reward> reward = Status::NotFound("");
  auto txt = sandbox.ReadFile(txt_path, kMaxRewardBytes);
  if (txt.ok()) {
    reward = ParseRewardTxt(*txt);
  } else if (txt.status().kind() == Kind::kNotFound) {
    auto json = sandbox.ReadFile(json_path, kMaxRewardBytes);
    if (json.ok()) {
      reward = ParseRewardJson(*json);
    } else if (json.status().kind() == Kind::kNotFound) {
      Fail(v, Outcome::kVerifierError,
           "no reward file: /tests/test.sh (exit status " + std::to_string(ran->exit_code) + ") wrote neither " +
               txt_path + " nor " + json_path);
      return Finish(v, prep, clock);
    } else {
      Blame(v, sandbox, "read " + json_path, json.status());
      return Finish(v, prep, clock);
    }
  } else {
    Blame(v, sandbox, "read " + txt_path, txt.status());
    return Finish(v, prep, clock);
  }
  if (!reward.ok()) {
    Fail(v, Outcome::kVerifierError, reward.status().message());
    return Finish(v, prep, clock);
  }
  v.reward = reward->value;
  v.rewards = reward->named;
  v.outcome = OutcomeForReward(reward->value, threshold);
  return Finish(v, prep, clock);
}

Verdict RunCommand(sandbox::Sandbox& sandbox, const VerifierSpec& spec, double threshold,
                   const StopToken* cancel, const Json* previous_tamper) {
  Stopwatch clock;
  Verdict v = Start(spec, threshold);
  Preparation prep;
  if (!Prepare(sandbox, spec, spec.command, false, previous_tamper, v, &prep)) return Finish(v, prep, clock);
  sandbox::ExecRequest req;
  req.argv = {"/bin/sh", "-c", spec.command};
  req.env = spec.env;
  req.user = spec.user;
  req.timeout_seconds = spec.timeout_sec;
  req.cancel = cancel;
  auto ran = sandbox.Exec(req);
  if (!ran.ok()) {
    if (ran.status().kind() == Kind::kCancelled) Fail(v, Outcome::kCancelled, "stopped by a signal");
    else Blame(v, sandbox, "run the verifier command", ran.status());
    return Finish(v, prep, clock);
  }
  v.log_tail = LogTail(ran->stdout_data, ran->stderr_data);
  if (ran->timed_out) {
    Fail(v, Outcome::kVerifierTimeout,
         "the verifier command ran past its deadline of " + std::to_string(spec.timeout_sec) + " s");
    return Finish(v, prep, clock);
  }
  v.exit_code = ran->exit_code;
  // The shell's own "cannot run" statuses say the check itself is broken.
  if (ran->exit_code == 126 || ran->exit_code == 127) {
    Fail(v, Outcome::kVerifierError,
         "the verifier command could not run (exit status " + std::to_string(ran->exit_code) + ")");
    return Finish(v, prep, clock);
  }
  v.reward = ran->exit_code == 0 ? 1.0 : 0.0;
  v.outcome = OutcomeForReward(*v.reward, threshold);
  return Finish(v, prep, clock);
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
