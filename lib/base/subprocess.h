// Running a short-lived helper program and taking its output: the host's
// tar, a Docker credential helper. The program is found on PATH; its stdin
// gets input and is then closed; stderr is inherited.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace forge {

struct ProcessOutput {
  int exit_code = -1;  // -1 when a signal ended it
  std::string out;     // its stdout, whole
};

// Unavailable when argv[0] cannot be started (not on PATH, not executable).
Result<ProcessOutput> RunCapture(const std::vector<std::string>& argv, const std::string& input = "");

}  // namespace forge
