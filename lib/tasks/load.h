// One entry point every tool uses to read tasks, whatever their format.
//
// An input is a forge task JSONL file, "-" for stdin, a Harbor task
// directory (it holds task.toml), or a directory of Harbor task directories
// (a dataset). A broken task is reported with where it came from and the
// field at fault, and the other tasks still load; strict mode stops at the
// first one instead.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "tasks/task.h"

namespace forge::tasks {

struct LoadOptions {
  bool strict = false;  // the first broken task or malformed line is an error
  // Where a warning (an unknown task.toml key, a directory that is no task)
  // and a broken task's reason go; unset: the Env's Warn and Error. A task's own warnings come
  // before it (on_task) or its reason.
  std::function<void(const std::string&)> on_warning;
  std::function<void(const std::string&)> on_broken;
};

struct LoadStats {
  size_t loaded = 0;    // tasks handed to on_task
  size_t broken = 0;    // tasks skipped: malformed lines, invalid fields, duplicate ids
  size_t warnings = 0;  // e.g. unknown task.toml keys
};

// Calls on_task for every good task, in input order (a dataset directory in
// name order), and stops at the first error on_task returns. Broken tasks are
// reported to env as errors ("file:line: field: reason (task skipped)"), what
// is only odd as warnings; afterwards, if any were skipped, returns
// InvalidData saying how many, so a pipeline notices. A missing input is
// NotFound; a stop requested on env, Cancelled. Task ids must be unique
// across all inputs.
Status LoadTasks(const std::vector<std::string>& inputs, Env& env, const LoadOptions& options,
                 const std::function<Status(Task&)>& on_task, LoadStats* stats = nullptr);

}  // namespace forge::tasks
