// K8sBackend's image pull Secret: made for a run from the user's registry
// credentials (pull_secret.h), or one the user names, checked; either way
// every pod the backend makes afterwards names it in imagePullSecrets.
#include "sandbox/k8s/k8s_backend.h"
#include "sandbox/k8s/pod_spec.h"
#include "sandbox/k8s/pull_secret.h"

namespace forge::sandbox::k8s {
namespace {

std::string SecretsPath(const std::string& namespace_) {
  return "/api/v1/namespaces/" + ApiClient::Escape(namespace_) + "/secrets";
}

}  // namespace

Status K8sBackend::ApplyPullSecret(const std::string& run_id, const std::string& docker_config_json) {
  const std::string& ns = cluster().namespace_;
  const std::string name = PullSecretName(run_id);
  // Messages name the Secret, never its content: an API error's text is the
  // server's Status message, which does not echo the body.
  const std::string body = BuildPullSecret(name, ns, run_id, docker_config_json).dump();
  const std::string what = "create the image pull Secret " + ns + "/" + name;
  auto created = client_.Call("POST", SecretsPath(ns), body, what);
  if (!created.ok()) return created.status();
  if (created->status == 409) {  // this run's, from an earlier forge-launch (a resume): replace it
    const std::string replace = "replace the image pull Secret " + ns + "/" + name;
    created = client_.Call("PUT", SecretsPath(ns) + "/" + ApiClient::Escape(name), body, replace);
    if (!created.ok()) return created.status();
    if (created->status != 200) return ApiError(*created, replace);
  } else if (created->status != 201 && created->status != 200) {
    return ApiError(*created, what);
  }
  options_.image_pull_secret = name;
  made_pull_secret_ = name;
  return Status::Ok();
}

Status K8sBackend::CheckPullSecret() {
  const std::string& name = options_.image_pull_secret;
  if (name.empty()) return Status::Ok();
  const std::string& ns = cluster().namespace_;
  const std::string what = "--k8s-image-pull-secret " + name + ": get Secret " + ns + "/" + name;
  auto got = client_.Call("GET", SecretsPath(ns) + "/" + ApiClient::Escape(name), "", what);
  if (!got.ok()) return got.status();
  if (got->status == 404) {
    return Status::BadConfig("--k8s-image-pull-secret " + name + ": no Secret " + name + " in namespace " + ns +
                             " (kubectl create secret docker-registry " + name + " -n " + ns + " ...)");
  }
  if (got->status != 200) return ApiError(*got, what);
  auto secret = ParseJsonBody(*got, what);
  if (!secret.ok()) return secret.status();
  const std::string type = secret->value("type", "");
  if (type != "kubernetes.io/dockerconfigjson" && type != "kubernetes.io/dockercfg") {
    return Status::BadConfig("--k8s-image-pull-secret " + name + ": Secret " + ns + "/" + name + " is of type '" +
                             type + "', not kubernetes.io/dockerconfigjson: the kubelet does not pull with it");
  }
  return Status::Ok();
}

Status K8sBackend::DeletePullSecret() {
  if (made_pull_secret_.empty()) return Status::Ok();
  const std::string& ns = cluster().namespace_;
  const std::string what = "delete the image pull Secret " + ns + "/" + made_pull_secret_;
  auto deleted = client_.Call("DELETE", SecretsPath(ns) + "/" + ApiClient::Escape(made_pull_secret_), "", what);
  if (!deleted.ok()) return deleted.status();
  if (deleted->status != 200 && deleted->status != 202 && deleted->status != 404) return ApiError(*deleted, what);
  made_pull_secret_.clear();
  return Status::Ok();
}

Result<int> K8sBackend::CollectPullSecrets(const std::string& run_id) {
  const std::string& ns = cluster().namespace_;
  const std::string what = "delete the image pull Secrets of run " + run_id;
  auto deleted = client_.Call("DELETE", SecretsPath(ns) + "?labelSelector=" + ApiClient::Escape(RunSelector(run_id)),
                              "", what);
  if (!deleted.ok()) return deleted.status();
  if (deleted->status == 403) return 0;  // RBAC without secrets: this user's runs never made one
  if (deleted->status != 200) return ApiError(*deleted, what);
  auto list = ParseJsonBody(*deleted, what);
  if (!list.ok()) return list.status();
  const auto& items = (*list)["items"];
  return items.is_array() ? static_cast<int>(items.size()) : 0;
}

}  // namespace forge::sandbox::k8s
