// forge-launch check: a dataset read as a run would read it, with nothing
// built, pulled or started: what a user runs first on thousands of new
// tasks. One record per task on out ("schema": "forge.check/1"):
//   {"status": "ok" | "warned" | "refused", "task_id", "source",
//    "warnings": [...], "error": "..."}
// "refused" is a task a run would skip (task.toml or compose file, the
// record's fields, the pod); "warned" one that would run, with what forge
// said about it (keys it carries without acting on, env templates whose
// variable is not set here, ...).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "records/jsonl.h"

namespace forge::launch {

struct CheckSummary {
  size_t ok = 0, warned = 0, refused = 0;
};

// InvalidData when some task was refused (their records are written), an
// input that cannot be read as for a run. Templates are checked against
// env's variables; a stop requested on it ends the reading.
Status CheckTasks(const std::vector<std::string>& inputs, Env& env, records::JsonlWriter& out,
                  CheckSummary& summary);

}  // namespace forge::launch
