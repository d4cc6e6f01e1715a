#include "verify/runner.h"

#include <condition_variable>
#include <deque>
#include <fmt/format.h>
#include <thread>

#include "base/json_field.h"
#include "tasks/load.h"
#include "verify/hardening.h"
#include "verify/rollout_fields.h"
#include "verify/verifiers.h"

namespace forge::verify {

using records::Json;

namespace {

// Outcomes forge-launch decides before any verifier could run; the verdict
// keeps them and the verifier is skipped.
std::optional<Outcome> LaunchOutcome(const Json& record) {
  auto it = record.find("outcome");
  if (it == record.end() || !it->is_string()) return std::nullopt;
  auto outcome = ParseOutcome(it->get<std::string>());
  if (!outcome) return std::nullopt;
  switch (*outcome) {
    case Outcome::kAgentTimeout:
    case Outcome::kAgentError:
    case Outcome::kInfraError:
    case Outcome::kCancelled:
      return outcome;
    default:
      return std::nullopt;
  }
}

std::optional<sandbox::Handle> HandleOf(const Json& record) {
  auto it = record.find("sandbox");
  if (it == record.end() || !it->is_object()) return std::nullopt;
  sandbox::Handle h;
  h.backend = JsonText(*it, "backend");
  h.id = JsonText(*it, "id");
  if (h.backend.empty() || h.id.empty()) return std::nullopt;
  return h;
}

std::string ContentText(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const auto& part : content) {
      const std::string type = JsonText(part, "type");
      if (type == "text" || type == "output_text") text += JsonText(part, "text");
    }
  }
  return text;
}

}  // namespace

std::string FinalAnswerFromCalls(const std::vector<store::CallRecord>& calls) {
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    if (it->side_call) continue;
    const Json& r = it->response;
    if (!r.is_object()) continue;
    std::string text;
    if (r.contains("choices") && r["choices"].is_array() && !r["choices"].empty()) {
      const Json& choice = r["choices"][0];
      if (choice.contains("message") && choice["message"].contains("content")) {
        text = ContentText(choice["message"]["content"]);
      }
    } else if (r.contains("content")) {  // Anthropic Messages
      text = ContentText(r["content"]);
    } else if (r.contains("output") && r["output"].is_array()) {  // Responses
      for (const auto& item : r["output"]) {
        if (item.is_object() && item.contains("content")) text += ContentText(item["content"]);
      }
    }
    if (!text.empty()) return text;
  }
  return "";
}

Runner::Runner(RunOptions options, store::Store* store, records::JsonlWriter* out)
    : options_(std::move(options)),
      store_(store),
      out_(out),
      backends_(options_.k8s, *options_.env),
      judge_(options_.judge, store, *options_.env) {}

Status Runner::LoadTasks() {
  if (options_.task_files.empty()) return Status::Ok();
  // JSONL files and Harbor task directories alike, checked by lib/tasks;
  // relative paths resolve against each task's own file or directory.
  return tasks::LoadTasks(options_.task_files, *options_.env, {}, [&](tasks::Task& task) -> Status {
    tasks_[task.id] = task.ToJson();
    return Status::Ok();
  });
}

Result<Json> Runner::FindTask(const Json& record, const std::string& task_id) {
  auto embedded = record.find("task");
  if (embedded != record.end() && embedded->is_object() && (embedded->contains("verifier") || embedded->contains("path"))) {
    return *embedded;
  }
  if (auto it = tasks_.find(task_id); it != tasks_.end()) return it->second;
  if (store_ != nullptr) {
    auto stored = store_->tasks().Get(task_id);
    if (!stored.ok()) return stored.status().Prefixed("store: get task " + task_id);
    if (stored->has_value()) return **stored;
  }
  return Status::InvalidData("task \"" + task_id + "\" not found (embedded, --tasks" +
                         std::string(store_ ? ", or the store)" : "; no --store given)"));
}

Result<std::string> Runner::Artefact(const Json& record, const VerifierSpec& spec,
                                     sandbox::Sandbox* sandbox) {
  std::string artefact;
  if (!spec.files.empty()) {
    for (const auto& path : spec.files) {
      auto content = sandbox->ReadFile(path, 256 * 1024);
      artefact += "=== " + path + " ===\n";
      if (content.ok()) {
        artefact += *content;
      } else if (content.status().kind() == Kind::kNotFound) {
        artefact += "(missing)";
      } else {
        return content.status().Prefixed("read " + path);
      }
      artefact += "\n";
    }
    return artefact;
  }
  if (record.contains("final_output") && record["final_output"].is_string()) {
    return record["final_output"].get<std::string>();
  }
  if (store_ != nullptr) {
    auto calls = store_->calls().CallsOfRollout(RolloutIdOf(record));
    if (!calls.ok()) return calls.status().Prefixed("store: calls of rollout");
    artefact = FinalAnswerFromCalls(*calls);
  }
  return artefact;
}

Result<Runner::Verified> Runner::VerifyOne(const Json& record) {
  if (auto schema = record.find("schema"); schema != record.end()) {
    // A verdict record may be verified again (e.g. with another threshold).
    if (!schema->is_string() || (*schema != kRolloutSchema && *schema != kVerdictSchema)) {
      return Status::InvalidData("schema: " + schema->dump() + " is not " + std::string(kRolloutSchema) +
                             " (this forge-verify reads that)");
    }
  }
  const std::string rollout_id = RolloutIdOf(record);
  if (rollout_id.empty()) return Status::InvalidData("rollout_id: missing");
  const std::string task_id = TaskIdOf(record);
  if (task_id.empty()) return Status::InvalidData("task_id: missing");
  const auto handle = HandleOf(record);
  const auto before = LaunchOutcome(record);

  Verified out{record, nullptr};
  Verdict v;
  v.threshold = options_.threshold;
  bool decided = false;
  std::optional<VerifierSpec> spec;
  if (before) {
    v.outcome = *before;
    v.message = "forge-launch reported " + std::string(OutcomeName(*before)) + "; the verifier did not run";
    decided = true;
  } else {
    auto task = FindTask(record, task_id);
    if (!task.ok()) return task.status();
    auto parsed = VerifierSpecFromTask(*task, *options_.env);
    if (!parsed.ok()) return parsed.status().Prefixed("task " + task_id);
    spec = std::move(*parsed);
    if (options_.timeout_override > 0) spec->timeout_sec = options_.timeout_override;
  }

  const bool needs_sandbox = spec && (spec->kind != tasks::VerifierKind::kJudge || !spec->files.empty());
  if (handle) {
    auto backend = backends_.Get(handle->backend);
    if (!backend.ok()) return backend.status();
    auto attached = (*backend)->Attach(*handle);
    if (attached.ok()) {
      out.sandbox = std::move(*attached);
    } else if (!decided) {
      // A sandbox whose keep-alive the agent stopped is the agent's failure.
      const std::string cause = AgentCauseOfLostSandbox(**backend, *handle, attached.status());
      v.outcome = cause.empty() ? Outcome::kInfraError : Outcome::kFailed;
      if (!cause.empty()) v.reward = 0.0;
      v.message = "attach to " + handle->backend + " sandbox " + handle->id + ": " +
                  attached.status().message() + (cause.empty() ? "" : " (" + cause + ")");
      decided = true;
    }
  } else if (needs_sandbox && !decided) {
    v.outcome = Outcome::kInfraError;
    v.message = "the record holds no sandbox handle (\"sandbox\": {backend, id}); "
                "was the rollout launched with its sandbox held?";
    decided = true;
  }

  if (!decided) {
    // A sandbox verified before carries that verification's own changes:
    // the evidence taken then stands.
    VerifyContext context;
    context.cancel = &options_.env->stop();
    context.require_evidence = options_.require_evidence;
    context.stream_timeout = options_.stream_timeout;
    if (auto it = record.find("verdict"); it != record.end() && it->is_object() && it->contains("tamper")) {
      context.previous_tamper = &(*it)["tamper"];
    }
    if (auto it = record.find("baseline"); it != record.end()) {
      auto baseline = sandbox::Baseline::FromJson(*it);
      if (!baseline.ok()) return baseline.status();
      context.baseline = std::move(*baseline);
    }
    if (spec->kind == tasks::VerifierKind::kHarbor) {
      v = RunHarbor(*out.sandbox, *spec, options_.threshold, context);
    } else if (spec->kind == tasks::VerifierKind::kCommand) {
      v = RunCommand(*out.sandbox, *spec, options_.threshold, context);
    } else if (spec->kind == tasks::VerifierKind::kFiles) {
      v = RunFiles(*out.sandbox, *spec, options_.threshold);
    } else {
      auto artefact = Artefact(record, *spec, out.sandbox.get());
      if (!artefact.ok()) {
        v.verifier = "judge";
        v.outcome = Outcome::kInfraError;
        v.message = artefact.status().message();
      } else if (artefact->empty()) {
        v.verifier = "judge";
        v.outcome = Outcome::kVerifierError;
        v.message = "nothing to judge: no verifier.files, no final_output in the record, "
                    "and no answer in the recorded calls";
      } else {
        v = judge_.Grade(task_id, *spec, *artefact, options_.threshold);
      }
    }
  }

  out.record["schema"] = kVerdictSchema;
  out.record["verdict"] = v.ToJson();
  if (store_ != nullptr) {
    Status put = store_->verdicts().Put(rollout_id, std::string(OutcomeName(v.outcome)), v.TrustedReward(), out.record);
    if (!put.ok()) return put.Prefixed("store: put verdict of " + rollout_id);
  }
  return out;
}

void Runner::Finish(Verified& verified) {
  if (!verified.sandbox || options_.keep) return;
  Status released = verified.sandbox->Release();
  if (!released.ok()) {
    options_.env->Warn("release " + verified.sandbox->handle().backend + " sandbox " +
                       verified.sandbox->handle().id + ": " + released.message());
  }
  verified.sandbox.reset();
}

Status Runner::Run(RunSummary* summary) {
  FORGE_RETURN_IF_ERROR(LoadTasks().Prefixed("--tasks"));

  std::mutex mutex;
  std::condition_variable cv;
  std::deque<records::Record> queue;
  bool input_done = false;
  Status failure;  // the worst failure of forge itself; first one wins
  bool warned_unchecked = false;
  auto progress = options_.env->StartProgress("verify");
  const size_t jobs = static_cast<size_t>(std::max(1, options_.jobs));

  auto worker = [&] {
    for (;;) {
      records::Record r;
      {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return !queue.empty() || input_done; });
        if (queue.empty()) return;
        r = std::move(queue.front());
        queue.pop_front();
        cv.notify_all();
      }
      if (options_.env->stop().requested()) continue;  // drain: left for a later run, sandbox held
      auto verified = VerifyOne(r.json);
      if (!verified.ok()) {
        options_.env->Error(r.where() + ": " + verified.status().message());
        std::lock_guard<std::mutex> lock(mutex);
        ++summary->skipped;
        if (failure.ok() && !failure.output_closed() &&
            verified.status().kind() != Kind::kInvalidData) {
          failure = verified.status();
        }
        continue;
      }
      const Json& verdict = verified->record["verdict"];
      const std::string outcome = JsonText(verdict, "outcome");
      {
        std::lock_guard<std::mutex> lock(mutex);
        const Json& tamper = verdict.value("tamper", Json::object());
        if (tamper.value("checked", true) == false && !warned_unchecked) {
          warned_unchecked = true;
          options_.env->Warn("verifiers run without runtime evidence of tampering (" + tamper.value("why", std::string()) +
                    "): their verdicts carry \"tamper\": {\"checked\": false}; --require-evidence refuses them");
        }
        Status written = out_->Write(verified->record);
        if (!written.ok() && failure.ok() && !failure.output_closed()) failure = written;
        ++summary->verified;
        ++summary->outcomes[outcome];
        if (outcome == "passed") ++summary->passed; else ++summary->negative;
        progress->Advance();
        progress->SetDetail(fmt::format("{} passed, {} not", summary->passed, summary->negative));
      }
      Finish(*verified);
    }
  };
  std::vector<std::thread> workers;
  for (size_t i = 0; i < jobs; ++i) workers.emplace_back(worker);
  records::ReaderOptions reader;
  reader.strict = options_.strict;
  Status read = records::ForEachRecord(options_.inputs, *options_.env, reader, [&](records::Record& r) -> Status {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return queue.size() < 2 * jobs; });
    if (failure.output_closed()) return Status::OutputClosed();
    queue.push_back(std::move(r));
    cv.notify_all();
    return Status::Ok();
  });
  {
    std::lock_guard<std::mutex> lock(mutex);
    input_done = true;
  }
  cv.notify_all();
  for (auto& t : workers) t.join();
  progress->Finish();

  if (options_.env->stop().requested()) return Status::Cancelled("stopped by a signal");
  if (!failure.ok() || failure.output_closed()) return failure;
  if (!read.ok()) return read;
  if (summary->skipped > 0) {
    return Status::InvalidData(fmt::format("{} record(s) could not be verified (see above); their sandboxes are kept",
                                           summary->skipped));
  }
  if (summary->negative > 0) {
    return Status::Negative(fmt::format("{} of {} rollout(s) did not pass", summary->negative,
                                        summary->verified));
  }
  return Status::Ok();
}

}  // namespace forge::verify
