#include "sandbox/k8s/pod_services.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "sandbox/k8s/pod_spec.h"

namespace forge::sandbox::k8s {
namespace {

using Json = nlohmann::json;

// A DNS-1123 label: lower case letters, digits and '-'.
std::string DnsLabel(const std::string& prefix, const std::string& name) {
  std::string out = prefix;
  for (char c : name) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += std::isalnum(static_cast<unsigned char>(l)) ? l : '-';
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

Result<Json> VolumeMounts(const std::vector<PodMount>& mounts, const std::string& who) {
  Json out = Json::array();
  for (const PodMount& m : mounts) {
    if (m.volume.empty()) {
      return Status::InvalidArgument(who + ": the k8s backend cannot mount the host path " + m.host_path +
                           " (bake it into the image)");
    }
    out.push_back({{"name", DnsLabel("vol-", m.volume)}, {"mountPath", m.target}, {"readOnly", m.read_only}});
  }
  return out;
}

Json Probe(const Healthcheck& h) {
  Json command = h.test[0] == "CMD-SHELL" ? Json::array({"/bin/sh", "-c", h.test[1]})
                                          : Json(std::vector<std::string>(h.test.begin() + 1, h.test.end()));
  const int period = std::max(1, static_cast<int>(std::lround(h.interval_seconds)));
  // Failures in the start period do not count, as in Docker.
  const int grace = static_cast<int>(std::ceil(h.start_period_seconds / period));
  return {{"exec", {{"command", command}}},
          {"periodSeconds", period},
          {"timeoutSeconds", std::max(1, static_cast<int>(std::lround(h.timeout_seconds)))},
          {"failureThreshold", h.retries + grace}};
}

// Whether a dependent waits for the service to exit 0 (a plain init container).
bool RunsToCompletion(const Pod& pod, const std::string& name) {
  auto waits = [&](const std::map<std::string, ServiceCondition>& deps) {
    auto it = deps.find(name);
    return it != deps.end() && it->second == ServiceCondition::kCompletedSuccessfully;
  };
  if (waits(pod.main_depends_on)) return true;
  return std::any_of(pod.services.begin(), pod.services.end(), [&](const PodService& s) { return waits(s.depends_on); });
}

}  // namespace

Status AddPodServices(const Spec& spec, const K8sOptions& options, Json& pod_spec, Json& main_container) {
  const Pod& pod = *spec.pod;
  Json names = Json::array();
  for (const PodService& s : pod.services) names.push_back(s.name);
  pod_spec["hostAliases"] = Json::array({{{"ip", "127.0.0.1"}, {"hostnames", names}}});
  Json volumes = Json::array();
  for (const std::string& v : pod.volumes) volumes.push_back({{"name", DnsLabel("vol-", v)}, {"emptyDir", Json::object()}});
  if (!volumes.empty()) pod_spec["volumes"] = volumes;
  auto main_mounts = VolumeMounts(pod.main_mounts, "main");
  if (!main_mounts.ok()) return main_mounts.status();
  if (!main_mounts->empty()) main_container["volumeMounts"] = *main_mounts;

  Json resources = {{"cpu", CpuQuantity(spec.limits.cpus)}, {"memory", MemoryQuantity(spec.limits.memory_bytes)}};
  Json init = Json::array();
  for (const PodService& s : pod.services) {
    const std::string who = "service " + s.name;
    if (!s.build_context.empty()) {
      return Status::InvalidArgument(who + ": the k8s backend cannot build images (" + s.build_context +
                           "); forge-launch --registry builds and pushes it first");
    }
    Json env = Json::array();
    for (const auto& [k, v] : s.env) env.push_back({{"name", k}, {"value", v}});
    Json c = {{"name", DnsLabel("", s.name)},
              {"image", s.image},
              {"imagePullPolicy", options.image_pull_policy},
              {"env", env},
              {"resources", {{"requests", resources}, {"limits", resources}}},
              {"securityContext", {{"allowPrivilegeEscalation", false}}}};
    if (s.entrypoint) c["command"] = *s.entrypoint;
    if (s.command) c["args"] = *s.command;
    if (!s.workdir.empty()) c["workingDir"] = s.workdir;
    if (!RunsToCompletion(pod, s.name)) {
      c["restartPolicy"] = "Always";  // a native sidecar: runs beside main
      if (s.healthcheck) c["startupProbe"] = Probe(*s.healthcheck);
    }
    auto mounts = VolumeMounts(s.mounts, who);
    if (!mounts.ok()) return mounts.status();
    if (!mounts->empty()) c["volumeMounts"] = *mounts;
    init.push_back(std::move(c));
  }
  if (!init.empty()) pod_spec["initContainers"] = init;
  return Status::Ok();
}

}  // namespace forge::sandbox::k8s
