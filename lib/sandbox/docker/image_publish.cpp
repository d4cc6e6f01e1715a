#include "sandbox/docker/image_publish.h"

#include <chrono>

#include <fmt/format.h>

#include "base/base64.h"
#include "sandbox/docker/image_pull.h"
#include "sandbox/docker/registry.h"
#include "sandbox/tar.h"

namespace forge::sandbox::docker {
namespace {

// A failure the next rollout of the same inputs would meet again.
bool Lasting(const Status& status) { return !status.ok() && !status.transient(); }

}  // namespace

std::string PublishRepository(const std::string& registry) {
  std::string base = registry;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/forge-task";
}

std::string PublishTag(const std::string& registry, const std::string& input_hash) {
  return PublishRepository(registry) + ":" + input_hash.substr(0, 40);
}

Status PushImage(Engine& engine, const std::string& image, const std::string& registry_auth, double timeout_seconds,
                 const std::function<void(const PullProgress&)>& on_progress) {
  const ImageRef ref = ParseImageRef(image);
  const std::string path = "/images/" + Engine::Escape(ref.repository) + "/push?tag=" + Engine::Escape(ref.tag);
  // The engine wants the header even for a registry without credentials.
  const std::string auth = registry_auth.empty() ? Base64Encode("{}", true) : registry_auth;
  const std::string what = "push " + image;
  PullProgress progress;
  auto answer = PostWithProgress(engine, path, {"X-Registry-Auth: " + auth}, timeout_seconds, what, progress,
                                 on_progress);
  if (!answer.ok()) return answer.status();
  if (answer->status != 200) return StatusForHttp(what, HttpResponse{answer->status, answer->head, "application/json"});
  if (progress.error().empty()) return Status::Ok();
  const std::string message = "the registry refused " + what + ": " + progress.error();
  return RegistryErrorIsTransient(progress.error()) ? Status::Unavailable(message) : Status::BadConfig(message);
}

Result<PublishedImage> ImagePublisher::Publish(const std::string& context_dir, const HarnessLayer* layer,
                                               const std::string& run_id, double timeout_seconds,
                                               const Backend::ProgressText& on_progress) {
  auto hash = ImageInputHashOf(context_dir, layer);
  if (!hash.ok()) return hash.status().Prefixed("image inputs");
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = done_.find(*hash); it != done_.end()) {
    if (!it->second.ok()) return it->second.status();
    PublishedImage again = *it->second;
    again.built = again.pushed = false;
    return again;
  }
  const std::string tag = PublishTag(registry_, *hash);
  auto auth = RegistryAuth(tag, docker_->docker_config());
  if (!auth.ok()) return auth.status();
  if (on_progress) on_progress("registry: is " + tag.substr(tag.rfind(':') + 1, 12) + " there?");
  auto known = ManifestDigest(tag, *auth, tls_);
  if (!known.ok()) return known.status();
  Result<PublishedImage> published = PublishedImage{};
  if (known->has_value()) {
    published = PublishedImage{PublishRepository(registry_) + "@" + **known, tag, false, false};
  } else {
    published = BuildAndPush(context_dir, layer, run_id, tag, *auth, timeout_seconds, on_progress);
  }
  if (published.ok() || Lasting(published.status())) done_.emplace(*hash, published);
  return published;
}

Result<PublishedImage> ImagePublisher::BuildAndPush(const std::string& context_dir, const HarnessLayer* layer,
                                                    const std::string& run_id, const std::string& tag,
                                                    const std::string& auth, double timeout_seconds,
                                                    const Backend::ProgressText& on_progress) {
  auto built = docker_->BuildImage(context_dir, run_id, timeout_seconds, on_progress);
  if (!built.ok()) return built.status();
  if (layer != nullptr) {
    TarWriter context;
    context.AddFile("Dockerfile", HarnessLayerDockerfile(*built, layer->dest));
    FORGE_RETURN_IF_ERROR(context.AddHostPath(layer->source_dir, "harnesses").Prefixed("the harness layer"));
    built = docker_->BuildImageFrom("the harness layer (" + layer->source_dir + ") over " + context_dir,
                                   context.Finish(), run_id, timeout_seconds, on_progress);
    if (!built.ok()) return built.status();
  }
  const ImageRef ref = ParseImageRef(tag);
  auto tagged = docker_->engine().Call("POST", "/images/" + Engine::Escape(*built) + "/tag?repo=" +
                                                  Engine::Escape(ref.repository) + "&tag=" + ref.tag);
  if (!tagged.ok()) return tagged.status();
  if (tagged->status != 201 && tagged->status != 200) return StatusForHttp("tag " + tag, *tagged);
  FORGE_RETURN_IF_ERROR(PushImage(docker_->engine(), tag, auth, timeout_seconds, [&](const PullProgress& push) {
    if (on_progress && push.total_bytes() > 0) {
      on_progress(fmt::format("push {:.1f}/{:.1f} MB", push.done_bytes() / 1e6, push.total_bytes() / 1e6));
    }
  }));
  auto digest = ManifestDigest(tag, auth, tls_);
  if (!digest.ok()) return digest.status().Prefixed("after the push");
  if (!digest->has_value()) return Status::Protocol("registry: " + tag + " pushed, yet the registry does not have it");
  return PublishedImage{ref.repository + "@" + **digest, tag, true, true};
}

}  // namespace forge::sandbox::docker
