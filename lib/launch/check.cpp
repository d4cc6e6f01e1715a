#include "launch/check.h"

#include "launch/task_input.h"
#include "tasks/env_template.h"
#include "tasks/load.h"

namespace forge::launch {
namespace {

using Json = records::Json;

// What a run would find missing in this environment: template variables
// that are unset and have no default (the task would fail at its start).
std::vector<std::string> UnsetTemplates(const TaskSpec& spec, const Env& host) {
  std::vector<std::string> out;
  const std::pair<const std::map<std::string, std::string>*, const char*> fields[] = {
      {&spec.env, "environment.env"}, {&spec.solution_env, "solution.env"}};
  for (const auto& [env, field] : fields) {
    auto resolved = tasks::ResolveEnvTemplates(*env, field, tasks::HostEnvLookup(host));
    if (!resolved.ok()) out.push_back(resolved.status().message());
  }
  return out;
}

}  // namespace

Status CheckTasks(const std::vector<std::string>& inputs, Env& env, records::JsonlWriter& out,
                  CheckSummary& summary) {
  std::vector<std::string> pending;  // warnings about the task being read
  Status written;
  auto emit = [&](Json record) {
    record["schema"] = "forge.check/1";
    record["warnings"] = pending;
    pending.clear();
    if (written.ok()) written = out.Write(record);
  };
  tasks::LoadOptions options;
  options.on_warning = [&](const std::string& message) { pending.push_back(message); };
  options.on_broken = [&](const std::string& message) {
    ++summary.refused;
    emit({{"status", "refused"}, {"error", message}});
  };
  Status loaded = tasks::LoadTasks(inputs, env, options, [&](tasks::Task& task) -> Status {
    auto spec = SpecFromTask(task);
    if (!spec.ok()) {
      ++summary.refused;
      emit({{"status", "refused"}, {"task_id", task.id}, {"source", task.source}, {"error", spec.status().message()}});
      return written;
    }
    for (auto& unset : UnsetTemplates(*spec, env)) pending.push_back(std::move(unset));
    const bool warned = !pending.empty();
    ++(warned ? summary.warned : summary.ok);
    emit({{"status", warned ? "warned" : "ok"}, {"task_id", task.id}, {"source", task.source}});
    return written;
  });
  if (!pending.empty()) emit({{"status", "warned"}});  // about no task (a directory that is none)
  FORGE_RETURN_IF_ERROR(written);
  if (!loaded.ok() && loaded.kind() != Kind::kInvalidData) return loaded;
  if (summary.refused > 0) return Status::InvalidData(std::to_string(summary.refused) + " task(s) refused");
  return loaded;
}

}  // namespace forge::launch
