// A sandbox's services (sandbox/pod.h) in its Kubernetes Pod: each service
// is a native sidecar (an init container with restartPolicy Always), so the
// kubelet starts them in order, each after the one before passed its
// startup probe (made from its healthcheck), and the main container last; a
// service its dependents wait on to complete is a plain init container. The
// pod's containers share one network namespace already; hostAliases map
// every service name to 127.0.0.1, and pod volumes are emptyDirs.
#pragma once

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sandbox/k8s/options.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox::k8s {

// Adds spec.pod to the pod spec (and main's volume mounts to main). InvalidArgument
// naming the service when something cannot run on Kubernetes: an image to
// build, a host path to mount.
Status AddPodServices(const Spec& spec, const K8sOptions& options, nlohmann::json& pod_spec,
                      nlohmann::json& main_container);

}  // namespace forge::sandbox::k8s
