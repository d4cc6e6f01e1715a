// What the user says about the cluster (command line, environment) and what
// forge resolves it to (kubeconfig or the in-cluster service account).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "base/status.h"

namespace forge::sandbox::k8s {

struct K8sOptions {
  // Explicit settings win over the kubeconfig; empty means "not given".
  std::string server;       // API server URL, e.g. https://10.0.0.1:6443
  std::string token;        // bearer token
  std::string token_file;   // bearer token file, re-read as it rotates
  std::string kubeconfig;   // path; empty: $KUBECONFIG, ~/.kube/config, in-cluster
  std::string context;      // kubeconfig context; empty: current-context
  std::string namespace_;   // empty: the context's namespace, else "default"
  std::string ca_file;      // PEM bundle that signs the API server's certificate
  bool insecure_skip_tls_verify = false;
  // Use the in-cluster service account even if a kubeconfig exists.
  bool in_cluster = false;
  // Where the in-cluster service account is mounted (a test may move it).
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  // Client-side rate limit, as client-go's QPS/Burst (its defaults are 5/10).
  double qps = 20;
  int burst = 30;
  int max_retries = 6;             // for 429, 5xx and transport errors
  double max_backoff_seconds = 30;  // cap on one wait, Retry-After included

  // Pod shape.
  std::string container = "main";
  std::string image_pull_policy = "IfNotPresent";
  bool run_as_non_root = false;
  std::string service_account_name;  // empty: the namespace's default
  std::string runtime_class;         // e.g. gvisor
  // A Secret of type kubernetes.io/dockerconfigjson every pod names in
  // imagePullSecrets: the user's (--k8s-image-pull-secret), or the one
  // forge-launch makes for a run from its --registry credentials.
  std::string image_pull_secret;
  // A forge image holding forge-box at /forge-box: with it, a rollout's
  // harness is its pod's own process (supervised.h) rather than an exec.
  std::string box_image;
  // Networks (network_policy.h): write the NetworkPolicies a run needs to
  // this file (a v1 List); create or replace them in the namespace; run
  // pods whose egress no policy polices anyway.
  std::string network_policies_file;
  bool apply_network_policies = false;
  bool allow_unenforced_network = false;
  double start_timeout_seconds = 300;  // Pending longer than this is an infra error
  int watch_timeout_seconds = 300;     // server-side end of one watch request

  // Polled while waiting for a pod or an exec, so SIGINT does not wait out a
  // start timeout; empty: MakeK8sBackend polls its Env's stop token.
  std::function<bool()> stop_requested;
};

// The resolved connection.
struct Cluster {
  std::string server;  // no trailing slash
  std::string namespace_ = "default";
  std::string token;
  std::string token_file;
  std::string ca_file;
  std::string ca_data;  // PEM
  std::string client_cert_file, client_key_file;
  std::string client_cert_data, client_key_data;  // PEM
  bool insecure_skip_tls_verify = false;
  std::string source;  // "kubeconfig <path>", "in-cluster", "options": for messages
};

// A YAML subset large enough for kubeconfig files: block mappings and
// sequences, plain and quoted scalars, comments, and empty {} / [].
Result<nlohmann::json> ParseYamlSubset(std::string_view text);

// Reads a kubeconfig's context (current-context when empty); relative file
// paths are resolved against base_dir, as kubectl does.
Result<Cluster> ClusterFromKubeconfig(std::string_view text, const std::string& context,
                                      const std::string& base_dir);

// Explicit options, then the kubeconfig ($KUBECONFIG, ~/.kube/config), then
// the in-cluster service account ($KUBERNETES_SERVICE_HOST), from env.
Result<Cluster> ResolveCluster(const K8sOptions& options, const Env& env);

}  // namespace forge::sandbox::k8s
