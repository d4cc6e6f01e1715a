// Images a cluster can pull: a task's environment/Dockerfile built (by the
// Docker backend's own builder, BuildKit or legacy), the harness layer put
// on top when the run's harness needs it, tagged by the hash of those inputs
// (image_inputs.h) as REGISTRY/forge-task:<hash>, pushed with the user's
// credentials (X-Registry-Auth from their docker config), and named by the
// digest the registry reports (REGISTRY/forge-task@sha256:...), so every pod
// runs exactly the image that was pushed. A tag the registry already has is
// neither built nor pushed: the same inputs are the same image, on any
// machine, in any run.
//
//   ImagePublisher images(std::move(docker), "127.0.0.1:5000/team");
//   auto published = images.Publish(task.build_context, &layer, run_id, 3600, show);
//   spec.image = published->image;   // 127.0.0.1:5000/team/forge-task@sha256:...
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/image_inputs.h"
#include "sandbox/docker/registry.h"

namespace forge::sandbox::docker {

struct PublishedImage {
  std::string image;  // REPOSITORY@sha256:..., for the pods
  std::string tag;    // REPOSITORY:<input hash>
  bool built = false, pushed = false;  // by this call (the first for these inputs)
};

// The repository images go to under --registry REGISTRY[/PATH].
std::string PublishRepository(const std::string& registry);

// The tag for an input hash (its first 40 hex digits).
std::string PublishTag(const std::string& registry, const std::string& input_hash);

// Pushes image (REPOSITORY:TAG) through the engine (POST /images/{name}/push).
// The registry's refusal is BadConfig with its answer; a registry that
// does not answer, Unavailable.
Status PushImage(Engine& engine, const std::string& image, const std::string& registry_auth,
                              double timeout_seconds, const std::function<void(const PullProgress&)>& on_progress);

class ImagePublisher {
 public:
  // docker: the engine and builder settings images are built with.
  // tls: how the registry's HTTPS is checked (registry.h).
  ImagePublisher(std::unique_ptr<DockerBackend> docker, std::string registry, RegistryTls tls = {})
      : docker_(std::move(docker)), registry_(std::move(registry)), tls_(std::move(tls)) {}

  // Once per input hash in this process: later callers get the first one's
  // image (built and pushed false), or its failure unless that was
  // transient. Failures name the step: the input hash, the registry, the
  // build (with the builder's message), the push (with the registry's).
  Result<PublishedImage> Publish(const std::string& context_dir, const HarnessLayer* layer,
                                 const std::string& run_id, double timeout_seconds,
                                 const Backend::ProgressText& on_progress);

  const std::string& registry() const { return registry_; }

 private:
  Result<PublishedImage> BuildAndPush(const std::string& context_dir, const HarnessLayer* layer,
                                      const std::string& run_id, const std::string& tag, const std::string& auth,
                                      double timeout_seconds, const Backend::ProgressText& on_progress);

  std::unique_ptr<DockerBackend> docker_;
  const std::string registry_;
  const RegistryTls tls_;
  std::mutex mu_;  // one publish at a time: the engine builds one at a time anyway
  std::map<std::string, Result<PublishedImage>> done_;  // by input hash
};

}  // namespace forge::sandbox::docker
