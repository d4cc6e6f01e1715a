#include "cli/k8s_flags.h"

#include <CLI/CLI.hpp>

namespace forge::cli {

void AddK8sFlags(CLI::App& app, sandbox::k8s::K8sOptions& options) {
  const char* group = "Kubernetes (--backend k8s)";
  auto* kubeconfig = app.add_option("--kubeconfig", options.kubeconfig,
                                    "Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
                         ->group(group);
  app.add_option("--k8s-context", options.context, "Kubeconfig context (default: current-context)")
      ->group(group);
  app.add_option("--k8s-namespace", options.namespace_,
                 "Namespace of the pods (default: the context's, else default)")
      ->group(group);
  app.add_option("--k8s-qps", options.qps, "Client-side API requests per second")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(group);
  app.add_option("--k8s-burst", options.burst, "Requests allowed at once above --k8s-qps")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(group);
  app.add_flag("--k8s-in-cluster", options.in_cluster,
               "Use the pod's service account even if a kubeconfig exists")
      ->excludes(kubeconfig)
      ->group(group);
}

}  // namespace forge::cli
