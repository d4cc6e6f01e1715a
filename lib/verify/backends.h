// The sandbox backends forge-verify can attach to, by the name a rollout
// record's "sandbox" handle carries. One backend object per name, shared by
// all workers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/env.h"
#include "base/status.h"
#include "sandbox/k8s/options.h"
#include "sandbox/sandbox.h"

namespace forge::verify {

class Backends {
 public:
  // k8s: how to reach the cluster (forge-verify's --kubeconfig and the rest
  // of the shared Kubernetes flags); the defaults find it as forge-launch's
  // do. The backends read the environment and the stop from env (which must
  // outlive them).
  Backends(sandbox::k8s::K8sOptions k8s, Env& env) : k8s_(std::move(k8s)), env_(env) {}

  // The backend for name, created on first use. BadConfig error for a name this
  // build does not know.
  Result<sandbox::Backend*> Get(const std::string& name);

  // For tests: serve name with the given backend.
  void Set(const std::string& name, std::unique_ptr<sandbox::Backend> backend);

 private:
  sandbox::k8s::K8sOptions k8s_;
  Env& env_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<sandbox::Backend>> backends_;
};

}  // namespace forge::verify
