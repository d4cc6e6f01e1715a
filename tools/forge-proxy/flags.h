// forge-proxy's flags, one row each (cli/flags.h): they build its command
// line and the OPTIONS of man/forge-proxy.1.
#pragma once

#include <string>

#include "base/env.h"
#include "cli/flags.h"
#include "proxy/proxy.h"

namespace forge::tools::proxy {

// What the flags set.
struct Args {
  forge::proxy::ProxyConfig config;
  std::string dump_rollout;
  bool export_calls = false;
  bool check_call_log = false;
};

// Defines every flag of forge-proxy on app, bound to args.
cli::FlagTable DefineFlags(CLI::App& app, Args& args, const Env& env);

}  // namespace forge::tools::proxy
