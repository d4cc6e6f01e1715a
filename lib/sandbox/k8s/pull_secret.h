// The Secret a private registry's pods pull with: type
// kubernetes.io/dockerconfigjson, its one key .dockerconfigjson holding a
// docker config ({"auths":{REGISTRY:{...}}}) base64-encoded, as Kubernetes'
// "Pull an Image from a Private Registry" makes it with kubectl create secret
// docker-registry; pods name it in spec.imagePullSecrets. The content is a
// credential: it goes into the request body and nowhere else (no message,
// no record, no store row carries it).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace forge::sandbox::k8s {

// The Secret's name for a run: forge-pull-<run, DNS-safe>-<hash of run id>,
// a DNS-1123 subdomain, the same in every forge-launch of the run.
std::string PullSecretName(const std::string& run_id);

// The Secret (labelled like the run's pods, so gc finds it).
nlohmann::json BuildPullSecret(const std::string& name, const std::string& namespace_, const std::string& run_id,
                               const std::string& docker_config_json);

}  // namespace forge::sandbox::k8s
