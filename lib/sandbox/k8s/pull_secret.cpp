#include "sandbox/k8s/pull_secret.h"

#include <cctype>

#include "base/base64.h"
#include "base/hash.h"
#include "sandbox/k8s/pod_spec.h"

namespace forge::sandbox::k8s {

std::string PullSecretName(const std::string& run_id) {
  std::string fragment;
  for (char c : run_id) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    fragment += std::isalnum(static_cast<unsigned char>(l)) ? l : '-';
    if (fragment.size() >= 40) break;
  }
  while (!fragment.empty() && fragment.back() == '-') fragment.pop_back();
  while (!fragment.empty() && fragment.front() == '-') fragment.erase(0, 1);
  return "forge-pull-" + (fragment.empty() ? "" : fragment + "-") + Sha256Hex(run_id).substr(0, 10);
}

nlohmann::json BuildPullSecret(const std::string& name, const std::string& namespace_, const std::string& run_id,
                               const std::string& docker_config_json) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata",
           {{"name", name},
            {"namespace", namespace_},
            {"labels", {{kManagedByLabel, "forge"}, {kRunLabel, LabelValue(run_id)}}},
            {"annotations", {{"forge/run-id", run_id}}}}},
          {"type", "kubernetes.io/dockerconfigjson"},
          {"data", {{".dockerconfigjson", Base64Encode(docker_config_json)}}}};
}

}  // namespace forge::sandbox::k8s
