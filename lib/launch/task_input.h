// What forge-launch takes from a task (lib/tasks reads every input format:
// forge task JSONL, Harbor task directories, datasets of them). Limits a task
// does not state explicitly are left unset, so the launcher's --cpus,
// --memory and --agent-timeout apply to them.
//
// Launcher-only fields read from the task object: "files" (a host directory
// whose contents go to the work directory; relative to the task's source),
// "skills" (a host directory of skill folders, each holding a SKILL.md, copied
// to the harness profile's skills_dir), "command" (the generic harness's
// shell command) and "display" (a virtual X display for a GUI task: "WxHxD"
// or {"width", "height", "depth"}; see sandbox/display.h), and "pod" (a
// Harbor compose file's services; launch/services.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "sandbox/display.h"
#include "sandbox/pod.h"
#include "tasks/compose.h"
#include "tasks/mcp_servers.h"
#include "tasks/task.h"

namespace forge::launch {

// A pod's environments as the record keeps them (compose templates,
// tasks/compose.h), resolved for each sandbox: main's and each service's.
struct PodEnv {
  tasks::ComposeEnv main;
  std::map<std::string, tasks::ComposeEnv> services;
};

struct TaskSpec {
  std::string id;
  std::string instruction;
  std::string image;
  std::string build_context;
  std::string files_dir;
  std::string skills_dir;       // host directory of skill folders (each with a SKILL.md)
  std::string solution_dir;     // host directory holding solve.sh, if the task has one
  std::string solution_script;  // or an inline script
  std::string harness;
  std::string command;
  std::string user;
  double agent_timeout_seconds = 0;  // 0: the launcher's default
  std::optional<double> cpus;
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> pids;
  std::optional<bool> allow_internet;
  // Harbor environment fields (tasks/task.h): env and solution_env hold
  // templates, resolved from forge-launch's environment per rollout.
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> solution_env;
  std::string workdir;  // empty: --workdir, else the image's WORKDIR, else /work
  int64_t gpus = 0;
  double build_timeout_seconds = tasks::kDefaultTimeoutSec;
  std::optional<tasks::Healthcheck> healthcheck;
  std::optional<sandbox::Display> display;  // Xvfb started before the harness
  // "pod" (launch/services.h): services beside the main container (their
  // environments empty), and the environments' templates.
  std::shared_ptr<const sandbox::Pod> pod;
  PodEnv pod_env;
  std::vector<tasks::McpServer> mcp_servers;  // environment.mcp_servers, for the harness
  std::string sandbox_skills_dir;  // environment.skills_dir: skill folders in the sandbox
  // The canonical task record, passed through into the rollout record;
  // kept serialized (a parsed record is ~2 KiB a task, held to the run's end).
  std::string record;
};

// InvalidData naming the task's source and the field when a launcher-only field
// is unusable.
Result<TaskSpec> SpecFromTask(const tasks::Task& task);

// What the run's checks before its first rollout read of a task (the network
// its pods get, the images it builds, its services), kept for every task to
// the run's end; the rest of its TaskSpec is rebuilt from the task's record
// when its rollout starts (launch/task_list.h).
struct TaskFacts {
  std::string id;
  std::optional<bool> allow_internet;
  bool has_pod = false;
  bool builds_images = false;  // its environment/Dockerfile, or a compose service's build:
  bool uses_launch_image = false;  // names no image and builds none: --image
};

TaskFacts FactsOf(const TaskSpec& task);

// The images a task names itself (its environment's, its compose
// services'), which its pods pull as named.
std::vector<std::string> NamedImages(const TaskSpec& task);

// Whether a pod's compose services build an image (build:).
bool BuildsServiceImages(const sandbox::Pod& pod);

}  // namespace forge::launch
