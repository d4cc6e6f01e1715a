#include "verify/backends.h"

// The backends live in lib/sandbox/<name>/; a build that lacks one reports
// the name as unknown rather than failing to compile.
#if __has_include("sandbox/docker/docker_backend.h")
#include "sandbox/docker/docker_backend.h"
#define FORGE_VERIFY_HAVE_DOCKER 1
#endif
#if __has_include("sandbox/k8s/k8s_backend.h")
#include "sandbox/k8s/k8s_backend.h"
#define FORGE_VERIFY_HAVE_K8S 1
#endif
#if __has_include("sandbox/local/local_backend.h")
#include "sandbox/local/local_backend.h"
#define FORGE_VERIFY_HAVE_LOCAL 1
#endif

namespace forge::verify {

Result<sandbox::Backend*> Backends::Get(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = backends_.find(name); it != backends_.end()) return it->second.get();
  std::unique_ptr<sandbox::Backend> backend;
  const std::optional<sandbox::BackendKind> kind = sandbox::BackendKindOf(name);
#ifdef FORGE_VERIFY_HAVE_DOCKER
  if (kind == sandbox::BackendKind::kDocker) backend = std::make_unique<sandbox::docker::DockerBackend>(env_);
#endif
#ifdef FORGE_VERIFY_HAVE_LOCAL
  if (kind == sandbox::BackendKind::kLocal) backend = std::make_unique<sandbox::local::LocalBackend>(env_);
#endif
#ifdef FORGE_VERIFY_HAVE_K8S
  if (kind == sandbox::BackendKind::kK8s) {
    auto made = sandbox::k8s::MakeK8sBackend(k8s_, env_);
    if (!made.ok()) return made.status().Prefixed("k8s backend");
    backend = std::move(*made);
  }
#endif
  if (!backend) return Status::BadConfig("sandbox backend \"" + name + "\" is not built into this forge-verify");
  auto* raw = backend.get();
  backends_[name] = std::move(backend);
  return raw;
}

void Backends::Set(const std::string& name, std::unique_ptr<sandbox::Backend> backend) {
  std::lock_guard<std::mutex> lock(mutex_);
  backends_[name] = std::move(backend);
}

}  // namespace forge::verify
