// forge-launch's flags, one row each (cli/flags.h): they build its command
// line and the OPTIONS of man/forge-launch.1.
#pragma once

#include <string>
#include <vector>

#include "base/env.h"
#include "cli/flags.h"
#include "launch/launcher.h"
#include "sandbox/k8s/options.h"

namespace forge::tools::launch {

// What the flags set; the strings are parsed once the command line is read.
struct Args {
  forge::launch::LaunchOptions options;
  std::string backend = "docker";  // sandbox::BackendName's
  bool bubblewrap = false;
  std::string store_path;
  std::string memory = "4g", agent_timeout = "600", hold_ttl = "1h", log_bytes = "64k";
  forge::launch::DockerOptions docker;
  std::string display;
  sandbox::k8s::K8sOptions k8s;
  CLI::App* gc = nullptr;  // the gc subcommand
  std::string gc_run, gc_older;
  bool gc_all = false, gc_images = false;
  CLI::App* check = nullptr;  // the check subcommand
  std::vector<std::string> check_inputs;
};

// Defines every flag of forge-launch on app (and its gc and check subcommands), bound
// to args; env gives the defaults taken from the environment ($FORGE_STORE).
cli::FlagTable DefineFlags(CLI::App& app, Args& args, const Env& env);

}  // namespace forge::tools::launch
