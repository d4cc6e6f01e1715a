// The docker backend: one container per rollout, driven through the Engine
// HTTP API (never the docker CLI).
//
// Shapes of a sandbox: a rollout's harness is the container's own process
// (RunOnce: a /bin/sh bootstrap runs the script sent on stdin), removed by
// the engine when it ends or, when held, staying on as the keep-alive below.
// Create makes the exec'd shape: PID 1 is a /bin/sh loop of `sleep 10` steps
// until the sandbox's lifetime is over (it also reaps orphans), so a
// container whose launcher died exits by itself at its deadline. Kept
// containers have AutoRemove off and `forge-launch gc` reaps what is left by
// label (forge.managed, forge.run, forge.rollout, forge.deadline). Limits are
// set at create: NanoCpus, Memory with MemorySwap equal to it (no swap),
// PidsLimit; every capability is dropped and no-new-privileges set. A
// deadline kills every process but PID 1 (`kill -KILL -1`: from a second
// exec, or from the held script's own watchdog), so the container survives
// for the verifier.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>
#include <string>

#include "sandbox/docker/engine.h"
#include "sandbox/docker/image_build.h"
#include "sandbox/docker/image_pull.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox::docker {

// HostConfig.Mounts for spec.mounts: bind mounts, read-only unless said
// otherwise. BadConfig naming the mount when a path is not absolute.
Result<nlohmann::json> BindMounts(const std::vector<Mount>& mounts);

// How long past a held sandbox's deadline the launcher waits for the
// script's end line before it gives the sandbox up.
inline constexpr int kHeldDeadlineGrace = 60;

// Containers gc removes at once.
inline constexpr size_t kCollectParallelism = 16;

class DockerBackend : public Backend {
 public:
  // The engine at $DOCKER_HOST, registry credentials from $DOCKER_CONFIG or
  // ~/.docker, as env has them.
  explicit DockerBackend(const Env& env);

  BackendKind kind() const override { return BackendKind::kDocker; }
  Result<std::unique_ptr<Sandbox>> Create(const Spec& spec) override;
  // create, wait (sent first, read last), attach with the script on stdin,
  // start: the same four engine calls as `docker run --rm -i` (plus one
  // archive PUT when host files are copied in). A held one needs no wait:
  // the end of the command is a line with a random marker on the attach
  // stream (one_shot_script.h), after which PID 1 is the keep-alive.
  bool CanRunOnce() const override { return true; }
  Result<ExecResult> RunOnce(const Spec& spec, const OneShot& job, std::unique_ptr<Sandbox>* hold) override;
  Result<std::unique_ptr<Sandbox>> Attach(const Handle& handle) override;
  Result<int> Collect(const std::string& run_id, int64_t older_than_seconds) override;
  // Images labelled forge.run=run_id (built for it) and the pulled ones, by DELETE /images.
  Result<int> CollectImages(const std::string& run_id, const std::vector<std::string>& pulled) override;

  // Builds the Dockerfile in context_dir for run_id (image_build.h), once
  // per run and context in this process; returns its tag
  // (forge-task:<image id prefix>). A build past timeout_seconds is
  // abandoned (Unavailable); a failing step is InvalidData, never retried.
  Result<std::string> BuildImage(const std::string& context_dir, const std::string& run_id,
                                 double timeout_seconds = 3600, const ProgressText& on_progress = {});
  // The same for a context given as its tar (the harness layer's, whose
  // FROM is an image built here); `what` names it in errors.
  Result<std::string> BuildImageFrom(const std::string& what, std::string context, const std::string& run_id,
                                     double timeout_seconds = 3600, const ProgressText& on_progress = {});
  // Builds or finds spec's image and reads its Config (GET /images/{name}/json).
  Result<ImageConfig> PrepareImage(Spec* spec, const ProgressText& on_progress) override;
  // 0 unless the engine has the NVIDIA runtime (GET /info Runtimes); then -1:
  // the engine, not forge, counts the devices.
  int AvailableGpus() override;
  // The engine's bridge network, where it has one.
  bool OwnNetworkHasEgress() override { return HasBridge(); }

  // The docker config whose "auths" give registry credentials for pulls
  // (default $DOCKER_CONFIG/config.json, else ~/.docker/config.json).
  void set_docker_config(std::string path) { docker_config_ = std::move(path); }
  const std::string& docker_config() const { return docker_config_; }
  // BuildKit (the default, as Harbor's compose builds) or the legacy builder.
  void set_builder(Builder builder) { builder_ = builder; }

  // Checks that the engine answers; Unavailable with the socket path if not.
  Status Ping();
  Engine& engine() { return *engine_; }

 private:
  // Creates (does not start) the container: kept (keep-alive PID 1, exec'd
  // into) or one-shot (a bootstrap that runs the script sent on stdin),
  // removed by the engine when it exits unless held.
  enum class Shape { kKept, kOneShot, kOneShotHeld };
  // pod: adds what a pod's main container needs (pod_runner.h).
  Result<std::string> CreateContainer(const Spec& spec, Shape shape, const class PodRunner* pod = nullptr);
  // Once per run id, before its first container: removes the run's
  // containers that were created and never started (a launcher killed
  // between create and start leaves them; AutoRemove never fires).
  void ReapUnstarted(const std::string& run_id);
  // Puts the job's host files into the created container as one archive.
  Status PutCopies(const std::string& id, const std::vector<std::pair<std::string, std::string>>& copies);
  int HostCpus();  // from GET /info, once; 0 if unknown
  // A BuildKit build has no session, so no registry credentials: the
  // Dockerfile's base images the user's config has credentials for are
  // pulled with them first, when the engine lacks them.
  Status PullBaseImages(const std::string& context_dir, double timeout_seconds, const ProgressText& on_progress);
  // BuildImage and BuildImageFrom: once per run and context; bases_of, when
  // given, is the context directory whose Dockerfile's private bases are
  // pulled first (PullBaseImages).
  Result<std::string> Build(const std::string& what, std::string context, const std::string& bases_of,
                            const std::string& run_id, double timeout_seconds, const ProgressText& on_progress);
  // Whether the engine has its default bridge network (asked once).
  bool HasBridge();
  // RUN steps' network: "" (the engine's bridge) or "host" on an engine without one.
  std::string BuildNetworkMode();
  // HostConfig.NetworkMode for a policy: host; bridge for kOwn where there
  // is one; else none (own loopback; the relay reaches the proxy).
  std::string NetworkMode(NetworkPolicy policy);
  // RunOnce's pieces: the wait (not held) and attach calls opened before
  // the start, and the command's exit status once its output has been read.
  struct OneShotStreams;
  Result<OneShotStreams> OpenStreams(const std::string& id, bool held);
  // wait: null for a held sandbox, which has none.
  Status ExitStatusOf(const std::string& id, bool ended, class StreamDemux& demux, const std::string& marker,
                      class RawCall* wait, ExecResult& result);

  std::shared_ptr<Engine> engine_;
  std::mutex info_mutex_;
  int host_cpus_ = -1;
  std::mutex build_mutex_;  // one build at a time; the engine serializes them anyway
  std::map<std::string, std::string> built_;  // tag by hash of run and context
  Builder builder_ = Builder::kBuildKit;
  std::optional<bool> has_bridge_;
  std::mutex reap_mutex_;
  std::set<std::string> reaped_runs_;
  std::mutex pull_mutex_;   // one pull at a time: rollouts of a task want the same image
  std::string docker_config_;  // registry credentials
};

// The engine of a docker backend or sandbox; null for another backend's
// (forge-verify asks it what the agent changed, and why a sandbox is gone).
Engine* EngineOf(Backend& backend);
Engine* EngineOf(Sandbox& sandbox);

}  // namespace forge::sandbox::docker
