#include "common/k8s_flags.h"

namespace forge::tools {

std::vector<cli::Flag> K8sFlags(sandbox::k8s::K8sOptions& o) {
  return {
      {.names = "--kubeconfig", .value = "FILE", .bind = cli::Bind(o.kubeconfig),
       .help = "Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
       .doc = R"~(Kubeconfig to read. Default: the first file of $KUBECONFIG, else ~/.kube/config, else the
in\-cluster service account.)~"},
      {.names = "--k8s-context", .value = "NAME", .bind = cli::Bind(o.context),
       .help = "Kubeconfig context (default: current-context)",
       .doc = "Kubeconfig context. Default: its current\\-context."},
      {.names = "--k8s-namespace", .value = "NS", .bind = cli::Bind(o.namespace_),
       .help = "Namespace of the pods (default: the context's, else default)",
       .doc = R"~(Namespace for the pods. Default: the context's namespace, the service account's, or "default".
A held rollout's handle names its pod's namespace, so forge\-verify needs it only where no handle does.)~"},
      {.names = "--k8s-qps", .value = "N", .bind = cli::Bind(o.qps), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::PositiveNumber); },
       .help = "Client-side API requests per second",
       .doc = R"~(Client\-side limit on API requests per second. 429 answers wait for their
Retry\-After on top of this.)~"},
      {.names = "--k8s-burst", .value = "N", .bind = cli::Bind(o.burst), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::PositiveNumber); },
       .help = "Requests allowed at once above --k8s-qps",
       .doc = R"~(Requests that may go at once before the QPS limit applies.)~"},
      {.names = "--k8s-server", .value = "URL", .bind = cli::Bind(o.server),
       .help = "API server URL (default: the kubeconfig's, else in-cluster)",
       .doc = R"~(API server URL, e.g. https://10.0.0.1:6443; wins over the kubeconfig's. Default: from the
kubeconfig, else in\-cluster (https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT).)~"},
      {.names = "--k8s-token", .value = "TOKEN", .bind = cli::Bind(o.token),
       .help = "Bearer token; overrides the kubeconfig's user",
       .doc = "Bearer token; overrides the kubeconfig's user."},
      {.names = "--k8s-token-file", .value = "FILE", .bind = cli::Bind(o.token_file),
       .help = "Bearer token file, re-read as it rotates",
       .doc = "Bearer token file, re\\-read every minute (rotating service\\-account tokens)."},
      {.names = "--k8s-ca", .value = "FILE", .bind = cli::Bind(o.ca_file),
       .help = "PEM bundle that signs the API server's certificate",
       .doc = "PEM bundle that signs the API server's certificate; overrides the kubeconfig's."},
      {.names = "--k8s-insecure-skip-tls-verify", .bind = cli::Bind(o.insecure_skip_tls_verify),
       .help = "Do not verify the API server's certificate (test clusters only)"},
      {.names = "--k8s-start-timeout", .value = "SECONDS", .bind = cli::Bind(o.start_timeout_seconds),
       .show_default = true, .more = [](CLI::Option& f) { f.check(CLI::PositiveNumber); },
       .help = "Seconds a pod may stay Pending before its rollout is an infra error",
       .doc = R"~(How long a pod may stay Pending before its rollout is an infrastructure error
(forge\-verify makes no pods and does not use it).)~"},
      {.names = "--k8s-run-as-non-root", .bind = cli::Bind(o.run_as_non_root),
       .help = "Set runAsNonRoot (the kubelet refuses images that would run as root)",
       .doc = R"~(Set runAsNonRoot on the container (the kubelet refuses images that would run as root).)~"},
      {.names = "--k8s-service-account", .value = "NAME", .bind = cli::Bind(o.service_account_name),
       .help = "Service account the pods run as (its token is not mounted)"},
      {.names = "--k8s-runtime-class", .value = "NAME", .bind = cli::Bind(o.runtime_class),
       .help = "RuntimeClass for the pods, e.g. gvisor",
       .doc = "RuntimeClass for the pods, e.g. gvisor or kata, for untrusted agents."},
      {.names = "--k8s-box-image", .value = "IMAGE", .bind = cli::Bind(o.box_image),
       .help = "Forge image with forge-box: the harness runs as the pod's own process",
       .doc = R"~(A forge image holding forge\-box at /forge\-box (scripts/make\-box\-image.sh builds one). With it
each rollout's harness is its pod's own process: an init container copies forge\-box into an emptyDir,
the main container's command is its supervisor, one exec sends the rollout's files, and the run's watch
says when the harness ended and its exit status, with no exec while it runs (forge\-launch only).
Without it, the harness runs through an exec into a keep\-alive pod.)~"},
      {.names = "--k8s-in-cluster", .bind = cli::Bind(o.in_cluster),
       .more = [](CLI::Option& f) { f.excludes("--kubeconfig"); },
       .help = "Use the pod's service account even if a kubeconfig exists",
       .doc = R"~(Use the pod's service account even if a kubeconfig exists (excludes
\-\-kubeconfig).)~"},
  };
}

std::vector<cli::Flag> K8sLaunchFlags(sandbox::k8s::K8sOptions& o) {
  return {
      {.names = "--k8s-network-policies", .value = "FILE", .bind = cli::Bind(o.network_policies_file),
       .help = "Write the NetworkPolicies the run's networks need to FILE (a v1 List, for kubectl apply -f)",
       .doc = R"~(Write the NetworkPolicies the run's restricted networks need to FILE, a v1
List for \fBkubectl apply \-f\fR: \fBforge\-deny\-egress\fR (pods labelled
forge.network=none or loopback: no egress) and \fBforge\-proxy\-only\fR
(forge.network=proxy\-only: egress only to the endpoints of the \-\-proxy
Service, on its target port, and to the cluster DNS). Written only when some
task's network is restricted.)~"},
      {.names = "--k8s-apply-network-policies", .bind = cli::Bind(o.apply_network_policies),
       .help = "Create or replace those NetworkPolicies in the namespace before the run",
       .doc = R"~(Create (or replace) those NetworkPolicies in the pods' namespace before the
first pod (RBAC: networkpolicies create, update).)~"},
      {.names = "--k8s-image-pull-secret", .value = "NAME", .bind = cli::Bind(o.image_pull_secret),
       .help = "Secret (kubernetes.io/dockerconfigjson) every pod pulls its images with; none is made from the docker config's credentials",
       .doc = R"~(An existing Secret of type kubernetes.io/dockerconfigjson in the pods'
namespace that every pod names in \fBspec.imagePullSecrets\fR (made e.g. with
\fBkubectl create secret docker\-registry\fR). It is checked before the first
pod (exit 78 when it is missing or of another type). Without it, a run whose
pods pull from registries the docker config has credentials for (a task's
image, \fB\-\-image\fR, a compose service's image, \fB\-\-registry\fR for the
images it builds, \fB\-\-k8s\-box\-image\fR) gets one Secret holding those
registries' credentials (an "auths" entry each; the others pull anonymously;
an identity token is refused, exit 78),
\fBforge\-pull\-\fIrun\fB\-\fIhash\fR, created (or replaced) before the first pod,
named by every pod, and deleted when forge\-launch ends (\fBgc \-\-run\-id\fR
removes one a killed forge\-launch left); RBAC: secrets create, update,
delete, deletecollection. Its content never reaches a log, record or the store.)~"},
      {.names = "--k8s-allow-unenforced-network", .bind = cli::Bind(o.allow_unenforced_network),
       .help = "Run pods of a restricted network even when no NetworkPolicy polices their egress",
       .doc = R"~(Before a run whose pods get a restricted network (none, loopback, proxy\-only;
what allow_internet = false gives), forge\-launch lists the namespace's
NetworkPolicies and refuses to start (exit 78) unless one polices the egress of
pods with that forge.network label. This flag runs them anyway, with a warning.)~"},
  };
}

}  // namespace forge::tools
