// A task's healthcheck ([environment.healthcheck], tasks/task.h) waited on
// inside the sandbox before the harness starts: the harness's argv is
// wrapped so the check runs in the same sandbox, on every backend.
#pragma once

#include <string>
#include <vector>

#include "tasks/task.h"

namespace forge::launch {

// The exit status of the wrapper when the healthcheck failed `retries`
// times in a row (a "forge-healthcheck:" line on stderr says so); the
// harness did not run.
inline constexpr int kHealthcheckExit = 196;

// argv run as: the check (`/bin/sh -c command`, each try bounded by
// timeout_sec where the image has `timeout`) until it exits 0, counting
// failures only after start_period_sec, then exec argv.
std::vector<std::string> WithHealthcheck(const tasks::Healthcheck& check, const std::vector<std::string>& argv);

}  // namespace forge::launch
