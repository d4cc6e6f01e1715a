// forge-pack's flags, one row each (cli/flags.h): they build its command
// line and the OPTIONS of man/forge-pack.1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "cli/flags.h"
#include "pack/pack.h"

namespace forge::tools::pack {

// What the flags set.
struct Args {
  forge::pack::PackOptions options;
  std::vector<int32_t> stop_ids;
  int64_t max_staleness = -1;
  int64_t policy_version = -1;
  double min_reward = 0;
  std::string processor;
};

// Defines every flag of forge-pack on app, bound to args.
cli::FlagTable DefineFlags(CLI::App& app, Args& args, const Env& env);

}  // namespace forge::tools::pack
