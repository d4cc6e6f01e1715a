// The sweep's steps (sweep.cpp), for the subcommands that sweep first
// (verify): its options, and its lines on stdout.
#pragma once

#include <string>
#include <vector>

#include "proc.h"

namespace forge::box {

struct SweepArgs {
  bool stop = false;
  bool clear = false;
  std::string tag;
  std::vector<Process> kept;
};

// Reads argv[*i] (and its value) when it is a sweep option (--stop, --clear,
// --tag TAG, --keep LIST): true, with *bad set (and said) for a bad value.
bool SweepArg(int argc, char** argv, int* i, SweepArgs* out, bool* bad);
// A tag is given and has no slash (else said).
bool SweepArgsValid(const SweepArgs& args);

// 0 when the sandbox is fit, 3 when processes would not stop, 4 when /tests
// or /logs/verifier could not be made afresh.
int SweepSteps(const SweepArgs& args);

}  // namespace forge::box
