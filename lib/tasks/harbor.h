// Harbor task directories, read into forge's task record.
//
// A Harbor task is a directory: task.toml (settings), instruction.md (the
// prompt, verbatim), environment/ (a Dockerfile, unless task.toml names a
// pre-built docker_image), tests/test.sh (writes /logs/verifier/reward.txt)
// and optionally solution/solve.sh, and maybe environment/docker-compose.yaml.
// Each task.toml key is read as the schema table says (harbor_schema.h):
// mapped onto the record, kept with a warning, or refused with an error
// naming file, line and key. Keys the table lacks (a newer Harbor's) are
// kept under the record's "harbor" object and warned about — never fatal,
// never silently lost.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tasks/task.h"

namespace forge::tasks {

// True when dir holds a task.toml.
bool IsHarborTaskDir(const std::string& dir);

// Reads one task directory. Errors name the file, and for task.toml the line
// and key: "t/task.toml:7: environment.cpus: expected a number, got string".
// Warnings (unknown keys, ignored sections) are appended to *warnings. A
// compose file's ${VAR} are the host's variables that env holds.
Result<Task> ReadHarborTask(const std::string& dir, const Env& env, std::vector<std::string>* warnings);

// Harbor's deprecated size strings ("4G", "512M", "1024K") in megabytes.
Result<int64_t> ParseSizeMb(const std::string& text);

}  // namespace forge::tasks
