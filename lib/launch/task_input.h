// What forge-launch needs from a task record. Until lib/tasks lands this
// reads the fields itself, accepting both forge's flat names and the nested
// Harbor-like ones:
//   id | task_id                      required
//   instruction                       the prompt text (or instruction_file)
//   image | environment.image | environment.docker_image
//   environment.build_context | environment.dockerfile_dir   a dir with a Dockerfile
//   files | workdir_files             host dir whose contents go to the workdir
//   harness                           profile name (the --harness flag wins)
//   agent.timeout_sec | timeout_sec   harness deadline
//   resources.{cpus,memory_mb,pids} | environment.{cpus,memory_mb}
//   environment.allow_internet        false forces network "none"
//   path                              a Harbor task directory (task.toml,
//                                     instruction.md, environment/Dockerfile)
// Relative paths are taken from the current directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "records/jsonl.h"

namespace forge::launch {

struct TaskSpec {
  std::string id;
  std::string instruction;
  std::string image;
  std::string build_context;
  std::string files_dir;
  std::string harness;
  double agent_timeout_seconds = 0;  // 0: the launcher's default
  std::optional<double> cpus;
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> pids;
  std::optional<bool> allow_internet;
  records::Json record;  // the input record, passed through into the rollout record
};

// A DataErr naming the record's file:line and the field when it is unusable.
Result<TaskSpec> TaskFromRecord(const records::Record& record);

}  // namespace forge::launch
