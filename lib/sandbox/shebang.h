// Running a task's script (tests/test.sh, solution/solve.sh) as Harbor does:
// by its shebang line, so a `#!/usr/bin/env python3` or `#!/bin/bash`
// script runs under what it names; a script without one runs under sh. The
// line is read by /bin/sh in the sandbox and the script is given to its
// interpreter as an argument, so it needs no execute bit and may sit on a
// read-only mount. (harnesses/oracle.json spells the same shell text.)
#pragma once

#include <string>
#include <vector>

namespace forge::sandbox {

inline constexpr const char* kRunByShebang =
    "f=$1; shift; IFS= read -r l < \"$f\"; "
    "case $l in '#!'*) exec ${l#??} \"$f\" \"$@\";; esac; exec sh \"$f\" \"$@\"";

// argv that runs script by its shebang in the sandbox.
inline std::vector<std::string> RunByShebang(const std::string& script) {
  return {"/bin/sh", "-c", kRunByShebang, "forge-script", script};
}

}  // namespace forge::sandbox
