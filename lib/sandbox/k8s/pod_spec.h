// The Pod forge creates for one rollout: a bare Pod (no Job), requests equal
// to limits (Guaranteed QoS), a server-side deadline, labels for the run's
// watch and for garbage collection, and a locked-down security context.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sandbox/k8s/options.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox::k8s {

inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kRunLabel = "forge.run";
inline constexpr const char* kRolloutLabel = "forge.rollout";
inline constexpr const char* kNetworkLabel = "forge.network";

// A label value Kubernetes accepts: at most 63 of [A-Za-z0-9-_.], starting
// and ending with a letter or digit. The full value goes into annotations.
std::string LabelValue(std::string_view value);

// "4" for 4 CPUs, "500m" for half of one.
std::string CpuQuantity(double cpus);
// "4Gi", "512Mi", or plain bytes.
std::string MemoryQuantity(int64_t bytes);

// The label selector for a run's pods (every forge pod when run_id is empty).
std::string RunSelector(const std::string& run_id);

struct Supervision;

// supervision: the harness is the pod's own process (supervised.h); else the
// container only keeps the pod alive for execs.
Result<nlohmann::json> BuildPod(const Spec& spec, const K8sOptions& options, const std::string& namespace_,
                                const Supervision* supervision = nullptr);

}  // namespace forge::sandbox::k8s
