// forge-launch's engine: reads task records, runs `attempts` rollouts of each
// with `jobs` of them in flight (their steps on a pool of threads, no more
// than 64 where the backend parks its runs), one sandbox per rollout, and writes one
// rollout record per attempt. The store holds each rollout's state and the
// hash of its secret, so a rerun with the same run id resumes (finished
// attempts are not redone) and a proxy can tell which rollout a call is for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "launch/harness.h"
#include "records/jsonl.h"
#include "sandbox/display.h"
#include "sandbox/docker/image_publish.h"
#include "sandbox/k8s/options.h"
#include "sandbox/sandbox.h"
#include "store/store.h"

namespace forge::launch {

struct LaunchOptions {
  Env* env = nullptr;                // required: reports, progress, the stop, clock, environment
  std::vector<std::string> inputs;   // task JSONL files; "-" is stdin
  int attempts = 1;
  int jobs = 4;
  std::string proxy;                 // base URL the harness is pointed at
  std::string run_id;
  bool hold = false;                 // keep the sandbox for forge-verify
  std::string harness = "command";   // for tasks that do not name one
  std::string command;               // the generic harness's shell command
  std::string harness_dir;
  // Where scripts/install-harnesses.sh put the npm harnesses ({harnesses} in profiles).
  std::string harness_install_dir;
  // Where docker sandboxes see it, bind-mounted read-only, when a profile uses {harnesses}.
  std::string harness_mount = kHarnessMountPath;
  std::string model;
  std::string image;                 // for tasks that name none
  std::string network;               // launch/network.h; empty: host with a proxy, else none
  // forge-relay, bind-mounted into proxy-only sandboxes; empty: next to forge-launch.
  std::string relay_binary;
  double agent_timeout_seconds = 600;
  double cpus = 4;
  int64_t memory_bytes = int64_t{4} << 30;
  int64_t pids = 4096;
  int infra_retries = 3;
  double backoff_seconds = 1;        // first infra retry delay; doubles, capped at 30 s
  size_t log_bytes = 64 << 10;       // per stream kept in the record
  int64_t hold_seconds = 3600;       // a held sandbox's server-side lifetime after the agent
  // The harness's working directory for every task; empty: the task's
  // environment.workdir, else the image's WORKDIR, else /work.
  std::string workdir;
  // Drop every capability (today's hardening before Harbor parity); the
  // default is Docker's default set, as `docker run` and Harbor give.
  bool drop_all_capabilities = false;
  std::string user;
  // Host directory of skill folders (each with a SKILL.md), copied into the
  // harness profile's skills_dir for every rollout (tasks may add their own).
  std::string skills_dir;
  // Start Xvfb with this screen before every harness (a task's own "display"
  // wins); DISPLAY points the harness at it.
  std::optional<sandbox::Display> display;
  // On k8s: builds, pushes and names by digest the images of tasks with an
  // environment/Dockerfile (--registry; MakeImagePublisher). Null: such
  // tasks are refused there.
  sandbox::docker::ImagePublisher* images = nullptr;
  // On k8s: the docker config whose credentials for the registries of the
  // images the pods pull go into the run's pull Secret (--docker-config,
  // else DefaultDockerConfig; empty: none).
  std::string docker_config;
};

// The skill folders under dir: dir itself if it holds a SKILL.md, else each
// subdirectory that does. InvalidData naming dir when there is none.
Result<std::vector<std::string>> SkillFolders(const std::string& dir);

// Runs everything; rollout records go to out. Returns InvalidData when some task
// records were unusable (the others still ran), Unavailable when rollouts
// ended in infra_error, Cancelled on a stop (SIGINT/SIGTERM).
Status Launch(const LaunchOptions& options, sandbox::Backend& backend, store::Store& store,
              records::JsonlWriter& out);

// Removes every sandbox labelled with run_id (all runs when empty) older
// than older_than_seconds (0: any age). Returns how many went.
Result<int> CollectGarbage(sandbox::Backend& backend, const std::string& run_id,
                           int64_t older_than_seconds);

// Removes the images run_id built and those forge-launch pulled for it (the
// store's rollout records say which: "image_pulled"); images another
// sandbox still uses stay. Returns how many went.
Result<int> CollectImages(sandbox::Backend& backend, store::Store& store, const std::string& run_id);

struct DockerOptions {
  // The Docker config whose "auths" give registry credentials (empty:
  // $DOCKER_CONFIG/config.json, else ~/.docker/config.json).
  std::string config;
  // Build task images with the engine's legacy builder instead of BuildKit.
  bool legacy_builder = false;
  // REGISTRY[/PATH] that images built for --backend k8s are pushed to.
  std::string registry;
  // PEM file of the CA that signs the registry's certificate (empty: the
  // engine's certs.d for it, if any).
  std::string registry_ca;
};

// What builds and pushes task images for k8s (image_publish.h): the local
// Docker engine's builder with docker's settings, pushing to
// docker.registry; null when no registry is given. The engine must answer.
Result<std::unique_ptr<sandbox::docker::ImagePublisher>> MakeImagePublisher(Env& env, const DockerOptions& docker);

// A local, docker or k8s backend (k8s: the cluster settings given, else
// $KUBECONFIG, ~/.kube/config or the in-cluster service account). bubblewrap:
// the local backend runs commands under bwrap (probed first). The backend
// reads the environment and the stop from env (which must outlive it).
Result<std::unique_ptr<sandbox::Backend>> MakeBackend(sandbox::BackendKind kind, Env& env,
                                                      const sandbox::k8s::K8sOptions& k8s = {},
                                                      bool bubblewrap = false, const DockerOptions& docker = {});

// The rollout id of (run, task, attempt): stable, so a rerun finds it.
std::string RolloutId(const std::string& run_id, const std::string& task_id, int attempt);

}  // namespace forge::launch
