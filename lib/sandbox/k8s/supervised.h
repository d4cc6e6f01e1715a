// Pod-native rollouts (K8sBackend::RunOnce): the harness is the pod's own
// process, run by forge-box supervise (box_protocol.h), which an init
// container copies from --k8s-box-image into an emptyDir, the way Tekton's
// entrypoint and Argo's executor reach a task's container. What forge-launch
// sends a pod is one archive, through one exec before the harness starts:
// the rollout's files, its command and environment (which may hold its
// secret, so never the pod's spec), and last the file that starts it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox::k8s {

struct Supervision {
  std::string box_image;       // holds forge-box at /forge-box
  double timeout_seconds = 0;  // the harness's deadline; 0: none
  size_t max_output_bytes = 1 << 20;
  int64_t hold_seconds = 0;    // > 0: stay as the keep-alive, ready for the verifier
  double wait_seconds = 300;   // for the setup exec
};

// The init container, the two emptyDirs and the main container's command
// (and, held, a readiness probe that turns true when the harness has ended).
void AddSupervisor(const Supervision& supervision, nlohmann::json& pod_spec, nlohmann::json& container);

// Whether a pod (as the API returns it) runs forge-box's supervisor.
bool IsSupervised(const nlohmann::json& pod);

// The setup archive, to unpack at "/": job's copies and files, the
// command and its environment under kSuperviseDir, then kSuperviseGo.
Result<std::string> SetupArchive(const OneShot& job);

// The command that unpacks it.
std::vector<std::string> SetupCommand();

}  // namespace forge::sandbox::k8s
