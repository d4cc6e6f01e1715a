// The Kubernetes backend: one bare Pod per rollout, created through the REST
// API, watched by one watch per run, entered by exec over WebSocket.
//
//   auto backend = forge::sandbox::k8s::MakeK8sBackend(options, env);
//   auto sandbox = (*backend)->Create(spec);   // waits until the pod runs
//
// Handles are "namespace/pod-name", so forge-verify can attach to a pod
// forge-launch held.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "sandbox/k8s/api_client.h"
#include "sandbox/k8s/options.h"
#include "sandbox/k8s/pod_watcher.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox::k8s {

class K8sBackend : public Backend {
 public:
  K8sBackend(Cluster cluster, K8sOptions options);
  ~K8sBackend() override;

  BackendKind kind() const override { return BackendKind::kK8s; }
  Result<std::unique_ptr<Sandbox>> Create(const Spec& spec) override;
  // Pod-native rollouts (supervised.h), given --k8s-box-image: the harness
  // is the pod's process; the run's watch says when it ends. API requests:
  // create, one exec (the setup), a log read unless the output fits in the
  // termination message, and a delete (held: the verifier's instead).
  bool CanRunOnce() const override { return !options_.box_image.empty(); }
  Result<ExecResult> RunOnce(const Spec& spec, const OneShot& job, std::unique_ptr<Sandbox>* hold) override;
  // The same with no thread held while the pod starts or the harness runs:
  // both waits are parked on the run's watch, the steps between them posted.
  bool ParksRunOnce() const override { return CanRunOnce(); }
  void RunOnceParked(const Spec& spec, const OneShot& job, std::unique_ptr<Sandbox>* hold, const Post& post,
                     RunDone done) override;
  Result<std::unique_ptr<Sandbox>> Attach(const Handle& handle) override;
  Result<int> Collect(const std::string& run_id, int64_t older_than_seconds) override;
  // The scheduler places a pod asking for nvidia.com/gpu where there are some.
  int AvailableGpus() override { return -1; }

  // Kubernetes-only extras.
  Result<std::string> Logs(const std::string& pod, int64_t tail_lines, int64_t limit_bytes);
  Status DeletePod(const std::string& pod);

  // Before a run (network_policy.h): for the forge.network values its pods
  // will have, writes and applies the NetworkPolicies as the options say,
  // then checks that a policy in the namespace polices the egress of each
  // restricted one (none, loopback, proxy-only); BadConfig naming what is
  // unenforced and `why` (e.g. the tasks that need it) unless
  // allow_unenforced_network, which instead returns those networks.
  // proxy_url: the pods' --proxy, a Service's cluster DNS name.
  Result<std::vector<std::string>> EnforceNetworks(const std::vector<std::string>& networks,
                                                   const std::string& proxy_url, const std::string& why);

  // Image pull Secrets (pull_secret.h), before the run's first pod.
  // ApplyPullSecret creates the run's Secret from a docker config's JSON (or
  // replaces it: a resumed run's) and makes every later pod name it;
  // CheckPullSecret checks that the one options.image_pull_secret names
  // exists and is of a type the kubelet pulls with; DeletePullSecret removes
  // the Secret ApplyPullSecret made, if any; CollectPullSecrets removes a
  // run's (gc), 0 when RBAC does not let this user touch Secrets.
  Status ApplyPullSecret(const std::string& run_id, const std::string& docker_config_json);
  Status CheckPullSecret();
  Status DeletePullSecret();
  Result<int> CollectPullSecrets(const std::string& run_id);

  ApiClient& client() { return client_; }
  const Cluster& cluster() const { return client_.cluster(); }
  const K8sOptions& options() const { return options_; }
  // Watch totals over every run this backend watched.
  struct WatchTotals {
    int64_t lists = 0, watches = 0, events = 0, gone = 0;
  };
  WatchTotals watch_stats();
  // The exec subprotocol the server chose last ("" before the first exec).
  std::string exec_protocol();
  void NoteExecProtocol(const std::string& protocol);

 private:
  RunWatcher& WatcherFor(const std::string& run_id);
  // Creates the pod (its manifest, serialized): its name.
  Result<std::string> CreatePod(const Spec& spec, std::string manifest);
  // Deletes a pod that will not run and forgets it: why, with a failed delete noted.
  Status Abandon(const std::string& pod, RunWatcher& watcher, Status why);
  // RunOnceParked's steps (k8s_backend.cpp).
  struct PodRun;
  void Park(const std::shared_ptr<PodRun>& run, RunWatcher::Wait wait,
            void (K8sBackend::*next)(const std::shared_ptr<PodRun>&, Result<PodView>));
  void PodRunning(const std::shared_ptr<PodRun>& run, Result<PodView> running);
  void PodDone(const std::shared_ptr<PodRun>& run, Result<PodView> done);
  // Creates the pod (its manifest, serialized) and waits until it runs
  // (deleted if it will not): its name. Neither the manifest nor the
  // answer is kept while it waits: a rollout in flight holds its name only.
  Result<std::string> StartPod(const Spec& spec, std::string manifest, RunWatcher& watcher);
  // A supervised pod's output: from its termination message when the
  // supervisor could put it all there, else from its log.
  Result<ExecResult> SupervisedOutput(const std::string& pod, const PodView& done, size_t max_output);
  std::string PodsPath() const;

  K8sOptions options_;
  ApiClient client_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<RunWatcher>> watchers_;  // by run label value
  std::string exec_protocol_;
  std::string made_pull_secret_;  // by ApplyPullSecret, until DeletePullSecret
};

// The factory forge-launch and forge-verify call for `--backend k8s`: the
// cluster from the options and env's variables; waits end on env's stop
// unless options.stop_requested says otherwise (env must outlive the backend).
Result<std::unique_ptr<K8sBackend>> MakeK8sBackend(const K8sOptions& options, const Env& env);

}  // namespace forge::sandbox::k8s
