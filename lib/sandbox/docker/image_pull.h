// Pulling an image through the Engine API (POST /images/create), with the
// user's registry credentials from their Docker config, and telling a
// failure that will happen again (the image does not exist, access denied)
// from one that may not (a registry 5xx, a timeout): the first is NotFound
// or BadConfig, never retried; the second is transient (Busy, Unavailable).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/line_splitter.h"
#include "base/status.h"
#include "sandbox/docker/engine.h"

namespace forge::sandbox::docker {

// An image reference split as /images/create wants it. registry is the
// host part ("127.0.0.1:5000"), or "docker.io" when the name has none.
struct ImageRef {
  std::string registry;
  std::string repository;  // everything before the tag, registry included
  std::string tag;         // "latest" when none is given; a digest is kept in repository
};
ImageRef ParseImageRef(const std::string& image);

// The docker config file: $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
std::string DefaultDockerConfig(const Env& env);

// The X-Registry-Auth header value for image's registry from the user's
// Docker config, looked up as the docker CLI does: the registry's
// credHelpers entry, then credsStore (each runs docker-credential-NAME get),
// then its "auths" entry. "" when there are none: an anonymous pull. A
// config that is there but unreadable or malformed, or a helper that fails,
// is a BadConfig error naming it.
Result<std::string> RegistryAuth(const std::string& image, const std::string& config_path);

// The .dockerconfigjson document a Kubernetes Secret of type
// kubernetes.io/dockerconfigjson carries for the registries of images, from
// the same credentials RegistryAuth finds: {"auths":{"REGISTRY":{"username",
// "password","auth"}, ...}}, one entry per registry that has credentials
// (Docker Hub's keyed by its v1 URL); "" when none has. An identity token is
// BadConfig naming the registry: the kubelet's docker config reads user
// names and passwords only.
Result<std::string> PullSecretDockerConfig(const std::vector<std::string>& images, const std::string& config_path);

// The X-Registry-Config header value for a build (every registry the config
// has credentials for, so a FROM may name any of them); "" when none.
Result<std::string> BuildRegistryConfig(const std::string& config_path);

// Whether a registry error met pulling (or building FROM) an image may pass
// if tried again: a registry that does not answer, a 5xx, a rate limit; not
// a missing image or denied access, which a retry meets again.
bool RegistryErrorIsTransient(const std::string& message);
// Reads the engine's pull answer (JSON lines, in any pieces) and adds up the
// layers' bytes; the first "error" line is kept.
class PullProgress {
 public:
  void Feed(std::string_view bytes);
  int64_t done_bytes() const;
  int64_t total_bytes() const;  // of the layers whose size is known so far
  size_t layers() const { return layers_.size(); }
  const std::string& error() const { return error_; }

 private:
  void Line(std::string_view text);
  struct Layer {
    int64_t current = 0;
    int64_t total = 0;
  };
  std::map<std::string, Layer, std::less<>> layers_;
  LineSplitter lines_;
  std::string error_;
};

// One POST whose answer is the engine's progress lines (a pull, a push), fed
// to progress and on_progress as they arrive and bounded by timeout_seconds
// (0: no limit). Returns the HTTP status and the answer's first 64 KiB; not
// done in time is Unavailable, another failure is prefixed with what.
struct ProgressAnswer {
  int status = 0;
  std::string head;
};
Result<ProgressAnswer> PostWithProgress(Engine& engine, const std::string& path,
                                        const std::vector<std::string>& headers, double timeout_seconds,
                                        const std::string& what, PullProgress& progress,
                                        const std::function<void(const PullProgress&)>& on_progress);

// Pulls image; registry_auth is RegistryAuth's value. on_progress sees the
// answer as it arrives. Not done within timeout_seconds (0: no limit) is
// Unavailable, a transient failure.
Status PullImage(Engine& engine, const std::string& image, const std::string& registry_auth,
                 double timeout_seconds, const std::function<void(const PullProgress&)>& on_progress = {});

}  // namespace forge::sandbox::docker
