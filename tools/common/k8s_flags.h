// The Kubernetes connection flags, one row each (cli/flags.h), for every
// tool that reaches sandboxes on a cluster (forge-launch --backend k8s,
// forge-verify run): one table, so both tools, their man pages and
// docs/k8s-backend.md say the same.
#pragma once

#include <vector>

#include "cli/flags.h"
#include "sandbox/k8s/options.h"

namespace forge::tools {

// The section their man page lists them in, and their --help heading.
inline constexpr const char* kK8sSection = "k8s";
inline constexpr const char* kK8sGroup = "Kubernetes (--backend k8s)";

// Bound to options; the defaults are K8sOptions' own.
std::vector<cli::Flag> K8sFlags(sandbox::k8s::K8sOptions& options);

}  // namespace forge::tools
