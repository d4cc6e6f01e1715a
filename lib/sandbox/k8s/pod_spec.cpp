#include "sandbox/k8s/pod_spec.h"

#include "sandbox/k8s/pod_services.h"
#include "sandbox/k8s/supervised.h"

#include <cctype>
#include <cmath>

namespace forge::sandbox::k8s {
namespace {

using Json = nlohmann::json;

// A DNS-1123 label fragment for generateName.
std::string NameFragment(std::string_view value) {
  std::string out;
  for (char c : value) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += std::isalnum(static_cast<unsigned char>(l)) ? l : '-';
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && out.front() == '-') out.erase(0, 1);
  return out;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::string LabelValue(std::string_view value) {
  std::string out;
  for (char c : value) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
    if (out.size() >= 63) break;
  }
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  while (!out.empty() && !alnum(out.front())) out.erase(0, 1);
  return out;
}

std::string CpuQuantity(double cpus) {
  long milli = std::lround(cpus * 1000);
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

std::string MemoryQuantity(int64_t bytes) {
  if (bytes > 0 && bytes % (int64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + "Gi";
  if (bytes > 0 && bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "Mi";
  return std::to_string(bytes);
}

std::string RunSelector(const std::string& run_id) {
  std::string selector = std::string(kManagedByLabel) + "=forge";
  if (!run_id.empty()) selector += std::string(",") + kRunLabel + "=" + LabelValue(run_id);
  return selector;
}

Result<Json> BuildPod(const Spec& spec, const K8sOptions& options, const std::string& namespace_,
                      const Supervision* supervision) {
  if (!spec.build_context.empty()) {
    return Status::InvalidArgument("the k8s backend cannot build images (" + spec.build_context +
                         "); build and push the image, then name it in the task");
  }
  if (spec.image.empty()) return Status::InvalidArgument("sandbox spec has no image");
  if (spec.run_id.empty() || LabelValue(spec.run_id).empty()) {
    return Status::InvalidArgument("sandbox spec needs a run id with letters or digits");
  }
  if (spec.limits.cpus <= 0 || spec.limits.memory_bytes <= 0) {
    return Status::InvalidArgument("sandbox limits must be positive");
  }

  Json labels = Json::object();
  for (const auto& [key, value] : spec.labels) labels[key] = LabelValue(value);
  labels[kManagedByLabel] = "forge";
  labels[kRunLabel] = LabelValue(spec.run_id);
  if (!spec.rollout_id.empty()) labels[kRolloutLabel] = LabelValue(spec.rollout_id);
  labels[kNetworkLabel] = spec.network == NetworkPolicy::kNone       ? "none"
                          : spec.network == NetworkPolicy::kLoopback ? "loopback"
                          : spec.network == NetworkPolicy::kProxyOnly ? "proxy-only"
                          : spec.network == NetworkPolicy::kOwn       ? "own"
                                                                     : "host";

  std::string fragment = NameFragment(spec.rollout_id.empty() ? spec.run_id : spec.rollout_id);
  Json metadata = {
      {"generateName", "forge-" + (fragment.empty() ? "" : fragment + "-")},
      {"namespace", namespace_},
      {"labels", labels},
      {"annotations", {{"forge/run-id", spec.run_id}, {"forge/rollout-id", spec.rollout_id}}},
  };

  Json resources = {{"cpu", CpuQuantity(spec.limits.cpus)},
                    {"memory", MemoryQuantity(spec.limits.memory_bytes)}};
  // The runtime's default capabilities unless told otherwise, as on docker.
  Json security = {{"allowPrivilegeEscalation", false}, {"privileged", false}};
  if (spec.drop_all_capabilities) security["capabilities"] = {{"drop", {"ALL"}}};
  bool non_root = options.run_as_non_root;
  if (!spec.user.empty()) {
    std::string uid = spec.user.substr(0, spec.user.find(':'));
    std::string gid = spec.user.find(':') == std::string::npos
                          ? ""
                          : spec.user.substr(spec.user.find(':') + 1);
    if (!AllDigits(uid) || (!gid.empty() && !AllDigits(gid))) {
      return Status::InvalidArgument("the k8s backend needs a numeric user (uid or uid:gid), not '" +
                           spec.user + "'");
    }
    security["runAsUser"] = std::stoll(uid);
    if (!gid.empty()) security["runAsGroup"] = std::stoll(gid);
    if (uid != "0") non_root = true;
  }
  if (non_root) security["runAsNonRoot"] = true;

  Json limits = resources;
  if (spec.gpus > 0) limits["nvidia.com/gpu"] = std::to_string(spec.gpus);  // requests default to limits
  Json env = Json::array();
  for (const auto& [name, value] : spec.env) env.push_back({{"name", name}, {"value", value}});

  int64_t lifetime = std::max<int64_t>(1, spec.lifetime_seconds);
  // The keep-alive only waits out the lifetime; it exits at once on SIGTERM.
  // It is the container's args, not its command: Kubernetes then runs the
  // image's ENTRYPOINT with it, as Docker runs an ENTRYPOINT with a Cmd (and
  // Harbor's compose service with its keep-alive), so an entrypoint that
  // starts a service and then `exec "$@"` works the same on both backends.
  // It sleeps in 10 s steps, as the docker backend's: forge-verify's sweep
  // kills every process but PID 1, and a keep-alive that ended with its one
  // sleep would end the container with it.
  std::string keep_alive = "trap 'exit 0' TERM; i=0; while [ $i -lt " + std::to_string((lifetime + 9) / 10) +
                           " ]; do sleep 10 & wait $!; i=$((i+1)); done";
  Json container = {
      {"name", options.container},
      {"image", spec.image},
      {"imagePullPolicy", options.image_pull_policy},
      {"args", {"sh", "-c", keep_alive}},
      {"env", env},
      {"resources", {{"requests", resources}, {"limits", limits}}},
      {"securityContext", security},
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
  };
  if (!spec.workdir.empty()) container["workingDir"] = spec.workdir;

  Json pod_spec = {
      {"restartPolicy", "Never"},
      {"activeDeadlineSeconds", lifetime},
      {"terminationGracePeriodSeconds", 5},
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
  };
  if (spec.pod) FORGE_RETURN_IF_ERROR(AddPodServices(spec, options, pod_spec, container));
  if (supervision) AddSupervisor(*supervision, pod_spec, container);
  pod_spec["containers"] = Json::array({container});
  // Never hostNetwork, whatever the network: no NetworkPolicy selects such a
  // pod, and it would share its node's namespace. The forge.network label is
  // what the run's NetworkPolicies select (network_policy.h).
  if (!options.service_account_name.empty()) {
    pod_spec["serviceAccountName"] = options.service_account_name;
  }
  if (!options.runtime_class.empty()) pod_spec["runtimeClassName"] = options.runtime_class;
  if (!options.image_pull_secret.empty()) {
    pod_spec["imagePullSecrets"] = Json::array({{{"name", options.image_pull_secret}}});
  }

  return Json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", pod_spec}};
}

}  // namespace forge::sandbox::k8s
