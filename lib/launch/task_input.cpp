#include "launch/task_input.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

namespace forge::launch {
namespace {

using Json = records::Json;

const Json* Find(const Json& json, std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    const Json* node = &json;
    std::string_view rest(path);
    bool found = true;
    while (!rest.empty()) {
      size_t dot = rest.find('.');
      std::string key(rest.substr(0, dot));
      if (!node->is_object() || !node->contains(key)) { found = false; break; }
      node = &(*node)[key];
      rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    }
    if (found && !node->is_null()) return node;
  }
  return nullptr;
}

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NoInput(path + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Fills what a Harbor task directory says, without overriding the record.
Status ReadHarborDir(const std::string& dir, TaskSpec& task, const std::string& where) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::DataErr(where + ": path '" + dir + "' is not a directory");
  if (task.instruction.empty()) {
    auto text = ReadText(dir + "/instruction.md");
    if (!text.ok()) return Status::DataErr(where + ": " + text.status().message());
    task.instruction = *text;
  }
  if (task.id.empty()) task.id = fs::path(dir).lexically_normal().filename().string();
  if (fs::exists(dir + "/task.toml", ec)) {
    toml::table table;
    try {
      table = toml::parse_file(dir + "/task.toml");
    } catch (const toml::parse_error& e) {
      return Status::DataErr(where + ": " + dir + "/task.toml: " + std::string(e.description()));
    }
    if (task.agent_timeout_seconds <= 0) {
      task.agent_timeout_seconds = table["agent"]["timeout_sec"].value_or(0.0);
    }
    if (task.image.empty()) task.image = table["environment"]["docker_image"].value_or(std::string());
    if (!task.cpus) if (auto v = table["environment"]["cpus"].value<double>()) task.cpus = *v;
    if (!task.memory_bytes) {
      if (auto v = table["environment"]["memory_mb"].value<int64_t>()) task.memory_bytes = *v << 20;
    }
    if (!task.allow_internet) {
      if (auto v = table["environment"]["allow_internet"].value<bool>()) task.allow_internet = *v;
    }
  }
  if (task.image.empty() && task.build_context.empty() && fs::exists(dir + "/environment/Dockerfile", ec)) {
    task.build_context = dir + "/environment";
  }
  return Status::Ok();
}

}  // namespace

Result<TaskSpec> TaskFromRecord(const records::Record& record) {
  const Json& json = record.json;
  const std::string where = record.where();
  TaskSpec task;
  task.record = json;
  auto string_field = [&](std::initializer_list<const char*> paths, std::string& out) -> Status {
    const Json* node = Find(json, paths);
    if (!node) return Status::Ok();
    if (!node->is_string()) {
      return Status::DataErr(where + ": '" + *paths.begin() + "' must be a string");
    }
    out = node->get<std::string>();
    return Status::Ok();
  };
  auto number_field = [&](std::initializer_list<const char*> paths) -> Result<std::optional<double>> {
    const Json* node = Find(json, paths);
    if (!node) return std::optional<double>();
    if (!node->is_number() || node->get<double>() < 0) {
      return Status::DataErr(where + ": '" + *paths.begin() + "' must be a non-negative number");
    }
    return std::optional<double>(node->get<double>());
  };
  FORGE_RETURN_IF_ERROR(string_field({"id", "task_id"}, task.id));
  FORGE_RETURN_IF_ERROR(string_field({"instruction"}, task.instruction));
  std::string instruction_file;
  FORGE_RETURN_IF_ERROR(string_field({"instruction_file"}, instruction_file));
  FORGE_RETURN_IF_ERROR(string_field({"image", "environment.image", "environment.docker_image"}, task.image));
  FORGE_RETURN_IF_ERROR(string_field({"environment.build_context", "environment.dockerfile_dir"}, task.build_context));
  FORGE_RETURN_IF_ERROR(string_field({"files", "workdir_files"}, task.files_dir));
  FORGE_RETURN_IF_ERROR(string_field({"harness"}, task.harness));
  auto timeout = number_field({"agent.timeout_sec", "timeout_sec"});
  if (!timeout.ok()) return timeout.status();
  if (*timeout) task.agent_timeout_seconds = **timeout;
  auto cpus = number_field({"resources.cpus", "environment.cpus"});
  if (!cpus.ok()) return cpus.status();
  if (*cpus) task.cpus = **cpus;
  auto memory = number_field({"resources.memory_mb", "environment.memory_mb"});
  if (!memory.ok()) return memory.status();
  if (*memory) task.memory_bytes = static_cast<int64_t>(**memory * 1048576.0);
  auto pids = number_field({"resources.pids"});
  if (!pids.ok()) return pids.status();
  if (*pids) task.pids = static_cast<int64_t>(**pids);
  if (const Json* net = Find(json, {"environment.allow_internet"})) {
    if (!net->is_boolean()) return Status::DataErr(where + ": 'environment.allow_internet' must be true or false");
    task.allow_internet = net->get<bool>();
  }
  std::string harbor_dir;
  FORGE_RETURN_IF_ERROR(string_field({"path"}, harbor_dir));
  if (!harbor_dir.empty()) FORGE_RETURN_IF_ERROR(ReadHarborDir(harbor_dir, task, where));
  if (!instruction_file.empty() && task.instruction.empty()) {
    auto text = ReadText(instruction_file);
    if (!text.ok()) return Status::DataErr(where + ": instruction_file: " + text.status().message());
    task.instruction = *text;
  }
  if (task.id.empty()) return Status::DataErr(where + ": task has no 'id'");
  if (!task.files_dir.empty() && !std::filesystem::is_directory(task.files_dir)) {
    return Status::DataErr(where + ": files '" + task.files_dir + "' is not a directory");
  }
  return task;
}

}  // namespace forge::launch
