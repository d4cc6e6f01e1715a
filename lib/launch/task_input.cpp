#include "launch/task_input.h"

#include <algorithm>
#include <filesystem>

#include "launch/services.h"

namespace forge::launch {
namespace {

using Json = records::Json;

bool Stated(const Json& extra, const char* pointer) {
  return extra.contains(Json::json_pointer(pointer));
}

}  // namespace

Result<TaskSpec> SpecFromTask(const tasks::Task& task) {
  namespace fs = std::filesystem;
  TaskSpec spec;
  spec.id = task.id;
  spec.instruction = task.instruction;
  spec.image = task.environment.image;
  spec.build_context = task.environment.build_context;
  spec.harness = task.harness;
  spec.user = task.agent.user;
  const Json& extra = task.extra;
  if (Stated(extra, "/agent/timeout_sec") || task.agent.timeout_sec != tasks::kDefaultTimeoutSec) {
    spec.agent_timeout_seconds = task.agent.timeout_sec;
  }
  if (Stated(extra, "/environment/cpus") || task.environment.cpus != tasks::kDefaultCpus) {
    spec.cpus = task.environment.cpus;
  }
  if (Stated(extra, "/environment/memory_mb") || task.environment.memory_mb != tasks::kDefaultMemoryMb) {
    spec.memory_bytes = task.environment.memory_mb << 20;
  }
  if (Stated(extra, "/resources/pids")) {
    const Json& pids = extra.at(Json::json_pointer("/resources/pids"));
    if (!pids.is_number_integer() || pids.get<int64_t>() <= 0) {
      return Status::InvalidData(task.source + ": resources.pids: expected a positive integer");
    }
    spec.pids = pids.get<int64_t>();
  }
  spec.allow_internet = task.environment.allow_internet;
  spec.env = task.environment.env;
  spec.workdir = task.environment.workdir;
  spec.gpus = task.environment.gpus;
  spec.build_timeout_seconds = task.environment.build_timeout_sec;
  spec.healthcheck = task.environment.healthcheck;
  if (task.solution) {
    spec.solution_dir = task.solution->dir;
    spec.solution_script = task.solution->script;
    spec.solution_env = task.solution->env;
  }
  if (extra.contains("command")) {
    if (!extra["command"].is_string()) return Status::InvalidData(task.source + ": command: expected a string");
    spec.command = extra["command"].get<std::string>();
  }
  if (extra.contains("display")) {
    auto display = sandbox::DisplayFromJson(extra["display"]);
    if (!display.ok()) return Status::InvalidData(task.source + ": " + display.status().message());
    spec.display = *display;
  }
  // A launcher-only directory field, relative to the task's own file.
  auto directory = [&](const char* field, std::string& into) -> Status {
    if (!extra.contains(field)) return Status::Ok();
    if (!extra[field].is_string()) {
      return Status::InvalidData(task.source + ": " + field + ": expected a string");
    }
    fs::path dir = extra[field].get<std::string>();
    if (dir.is_relative()) {
      // Relative to the task's file, as lib/tasks resolves its own paths.
      std::string source = task.source.substr(0, task.source.rfind(':'));
      fs::path base = fs::is_directory(source) ? fs::path(source) : fs::path(source).parent_path();
      dir = base / dir;
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return Status::InvalidData(task.source + ": " + field + ": '" + dir.string() + "' is not a directory");
    }
    into = dir.string();
    return Status::Ok();
  };
  FORGE_RETURN_IF_ERROR(directory("files", spec.files_dir));
  FORGE_RETURN_IF_ERROR(directory("skills", spec.skills_dir));
  if (Status s = ReadPodAndTools(extra, &spec); !s.ok()) return Status::InvalidData(task.source + ": " + s.message());
  spec.record = task.ToJson().dump();
  return spec;
}

bool BuildsServiceImages(const sandbox::Pod& pod) {
  return std::any_of(pod.services.begin(), pod.services.end(),
                     [](const sandbox::PodService& s) { return !s.build_context.empty(); });
}

TaskFacts FactsOf(const TaskSpec& task) {
  return {task.id, task.allow_internet, task.pod != nullptr,
          (task.image.empty() && !task.build_context.empty()) || (task.pod && BuildsServiceImages(*task.pod)),
          task.image.empty() && task.build_context.empty()};
}

std::vector<std::string> NamedImages(const TaskSpec& task) {
  std::vector<std::string> images;
  if (!task.image.empty()) images.push_back(task.image);
  if (task.pod) {
    for (const sandbox::PodService& service : task.pod->services) {
      if (!service.image.empty()) images.push_back(service.image);
    }
  }
  return images;
}

}  // namespace forge::launch
