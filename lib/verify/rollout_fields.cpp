#include "verify/rollout_fields.h"

namespace forge::verify {
namespace {

std::string StringAt(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace

std::string RolloutIdOf(const Json& record) {
  std::string id = StringAt(record, "rollout_id");
  return id.empty() ? StringAt(record, "id") : id;
}

std::string TaskIdOf(const Json& record) {
  std::string id = StringAt(record, "task_id");
  if (!id.empty()) return id;
  auto task = record.find("task");
  if (task != record.end()) {
    if (task->is_string()) return task->get<std::string>();
    return StringAt(*task, "id");
  }
  return "";
}

std::string HarnessOf(const Json& record) {
  std::string harness = StringAt(record, "harness");
  if (harness.empty() && record.contains("task")) harness = StringAt(record["task"], "harness");
  return harness;
}

}  // namespace forge::verify
