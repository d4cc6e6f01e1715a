// The docker backend's pods (sandbox/pod.h): the main container holds the
// network namespace, with every service name mapped to 127.0.0.1 in its
// /etc/hosts (ExtraHosts; containers that join a namespace share the
// owner's hosts file); each service is a container with NetworkMode
// container:<main>; named volumes are Docker volumes. Everything carries
// the run's labels and forge.pod=<rollout id>, and goes with the sandbox.
#pragma once

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sandbox/docker/engine.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox::docker {

inline constexpr const char* kPodLabel = "forge.pod";

// Builds an image from a context directory; returns its tag.
using ImageBuilder = std::function<Result<std::string>(const std::string& context_dir)>;

class PodRunner {
 public:
  PodRunner(Engine& engine, const Spec& spec) : engine_(engine), spec_(spec) {}

  // Before main is created: removes what a crashed try of the same rollout
  // left, builds the services' images and creates the volumes.
  Status Prepare(const ImageBuilder& build);
  // What main's create body gains: ExtraHosts, its volume mounts, the label.
  Status AddToMain(nlohmann::json& body) const;
  // After main started: creates and starts the services in order, each
  // dependency waited on for the condition its dependents name, then what
  // main depends on. Each service gets main's limits (nano_cpus as main's,
  // after the engine's clamp to the host's CPUs).
  Status Start(const std::string& main_id, int64_t nano_cpus);

 private:
  std::string VolumeName(const std::string& volume) const;
  nlohmann::json Labels() const;
  Result<nlohmann::json> Mounts(const std::vector<PodMount>& mounts) const;
  Result<std::string> CreateService(const PodService& service, const std::string& main_id,
                                    int64_t nano_cpus);
  Status WaitFor(const std::string& name, ServiceCondition condition);

  Engine& engine_;
  const Spec& spec_;
  std::map<std::string, std::string> images_;  // service -> image
  std::map<std::string, std::string> ids_;     // service -> container id
};

// Removes every container (but keep_id) and volume labelled
// forge.pod=<pod>: the services of a sandbox being released.
Status RemovePod(Engine& engine, const std::string& pod, const std::string& keep_id);

// Removes the volumes labelled with run_id (all of forge's when empty);
// volumes still in use are left for a later gc. Returns how many went.
Result<int> CollectVolumes(Engine& engine, const std::string& run_id);

}  // namespace forge::sandbox::docker
