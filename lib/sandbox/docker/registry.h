// Asking an image registry, over the OCI distribution API, what a tag is:
// HEAD /v2/<name>/manifests/<tag> with Accept naming the manifest types
// (OCI index and manifest, Docker's manifest list and v2 manifest), so the
// registry answers for the manifest it stores, and its Docker-Content-Digest
// is the digest a pull of the tag resolves to. Credentials are the user's
// (RegistryAuth's value): Basic, or a Bearer token fetched from the realm a
// 401's WWW-Authenticate names, as the docker CLI does. TLS as the engine
// that pushes speaks it: HTTPS verified against the system's CAs and the
// registry's own (RegistryTls); a registry on 127.0.0.0/8 or localhost (an
// insecure registry to the engine) over HTTPS, verified only when a CA is
// given for it, else over plain HTTP when it does not speak TLS.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/status.h"

namespace forge::sandbox::docker {

// The CA that signs a registry's certificate, beside the system's: the
// file given (--registry-ca), else the engine's certs.d for the registry
// (certs_dir/HOST[:PORT]/ca.crt), else none.
struct RegistryTls {
  std::string ca_file;
  std::string certs_dir = "/etc/docker/certs.d";
};

// The digest ("sha256:...") the registry has for image (REGISTRY/NAME:TAG),
// or nullopt when it answers that it has no such manifest (404). A registry
// that does not answer is Unavailable naming it; one that refuses the
// credentials (401/403 after them) is BadConfig with its answer, and so is
// one whose certificate the CAs do not sign.
// registry_auth: RegistryAuth's value for image, "" for none.
Result<std::optional<std::string>> ManifestDigest(const std::string& image, const std::string& registry_auth,
                                                  const RegistryTls& tls = {}, double timeout_seconds = 30);

// The parameters of a WWW-Authenticate challenge ("Bearer realm=\"...\",
// service=\"...\",scope=\"...\""): the scheme under "" and each name's value.
std::map<std::string, std::string> ParseChallenge(const std::string& header);

}  // namespace forge::sandbox::docker
