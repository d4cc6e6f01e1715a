// Running one command the way forge-box's supervisor and its verifier
// stream do: in a session of its own (a deadline kills all of it), stdin
// /dev/null, each stream kept up to a bound.
#pragma once

#include <csignal>
#include <cstddef>
#include <string>
#include <vector>

namespace forge::verify {
class Tracer;
}

namespace forge::box {

struct RunSpec {
  std::vector<std::string> argv;
  std::string workdir;          // empty: forge-box's own
  double timeout_seconds = 0;   // 0: none
  size_t max_output = 1 << 20;  // per stream
  bool path_lookup = true;      // false: argv[0] as given, never from PATH
  // Set from a signal handler: kill the command now (not a timeout).
  const volatile sig_atomic_t* terminate = nullptr;
  // Runs the command under this tracer (verify/tracer.h): its whole tree,
  // killed at the deadline or once the command has ended and its
  // descendants had 1 s more.
  verify::Tracer* tracer = nullptr;
};

struct RunOutcome {
  int exit = 127;  // the command's status, 128+signal when killed
  bool timed_out = false;
  bool truncated = false;
  std::string out, err;
};

// Runs spec.argv to its end (its streams read until drained, at most 1 s
// past its exit: a background process may hold them open). reap_all: reap
// every child that ends (PID 1 inherits orphans).
void RunCommand(const RunSpec& spec, bool reap_all, RunOutcome* r);


}  // namespace forge::box
