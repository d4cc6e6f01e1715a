// Pulling an image through the Engine API (POST /images/create), with the
// user's registry credentials from their Docker config, and telling a
// failure that will happen again (the image does not exist, access denied)
// from one that may not (a registry 5xx, a timeout): the first is NotFound
// or BadConfig, never retried; the second is transient (Busy, Unavailable).
#pragma once

#include <string>

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
std::string DefaultDockerConfig();

// The X-Registry-Auth header value for image's registry from the config's
// "auths" ("" when it has none: an anonymous pull). A config that is there
// but unreadable or malformed is a BadConfig error naming it.
Result<std::string> RegistryAuth(const std::string& image, const std::string& config_path);

// Whether a registry error met pulling (or building FROM) an image may pass
// if tried again: a registry that does not answer, a 5xx, a rate limit; not
// a missing image or denied access, which a retry meets again.
bool RegistryErrorIsTransient(const std::string& message);
// Pulls image; registry_auth is RegistryAuth's value.
Status PullImage(Engine& engine, const std::string& image, const std::string& registry_auth,
                 double timeout_seconds);

}  // namespace forge::sandbox::docker
