#include "common/k8s_flags.h"

#include <CLI/CLI.hpp>

namespace forge::tools {

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
  app.add_option("--k8s-server", options.server,
                 "API server URL (default: the kubeconfig's, else in-cluster)")
      ->group(group);
  app.add_option("--k8s-token", options.token, "Bearer token; overrides the kubeconfig's user")
      ->group(group);
  app.add_option("--k8s-token-file", options.token_file,
                 "Bearer token file, re-read as it rotates")
      ->group(group);
  app.add_option("--k8s-ca", options.ca_file, "PEM bundle that signs the API server's certificate")
      ->group(group);
  app.add_flag("--k8s-insecure-skip-tls-verify", options.insecure_skip_tls_verify,
               "Do not verify the API server's certificate (test clusters only)")
      ->group(group);
  app.add_option("--k8s-start-timeout", options.start_timeout_seconds,
                 "Seconds a pod may stay Pending before its rollout is an infra error")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(group);
  app.add_flag("--k8s-run-as-non-root", options.run_as_non_root,
               "Set runAsNonRoot (the kubelet refuses images that would run as root)")
      ->group(group);
  app.add_option("--k8s-service-account", options.service_account_name,
                 "Service account the pods run as (its token is not mounted)")
      ->group(group);
  app.add_option("--k8s-runtime-class", options.runtime_class,
                 "RuntimeClass for the pods, e.g. gvisor")
      ->group(group);
  app.add_flag("--k8s-in-cluster", options.in_cluster,
               "Use the pod's service account even if a kubeconfig exists")
      ->excludes(kubeconfig)
      ->group(group);
}

}  // namespace forge::tools
