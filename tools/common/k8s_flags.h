// The Kubernetes connection flags, defined once for every tool that can run
// sandboxes on a cluster (--backend k8s).
#pragma once

#include "sandbox/k8s/options.h"

namespace CLI {
class App;
}

namespace forge::tools {

// --kubeconfig, --k8s-context, --k8s-namespace, --k8s-qps, --k8s-burst,
// --k8s-in-cluster and the rest of docs/k8s-backend.md's options (server,
// token, CA, start timeout, pod security), filling options; the defaults
// shown in --help are K8sOptions' own.
void AddK8sFlags(CLI::App& app, sandbox::k8s::K8sOptions& options);

}  // namespace forge::tools
