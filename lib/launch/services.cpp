#include "launch/services.h"

#include <functional>
#include <set>

namespace forge::launch {
namespace {

using Json = records::Json;
using sandbox::ServiceCondition;

Status Bad(const std::string& field, const std::string& message) {
  return Status::InvalidData(field + ": " + message);
}

Result<std::vector<std::string>> Strings(const Json& value, const std::string& field) {
  if (!value.is_array()) return Bad(field, "expected a list of strings");
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) return Bad(field, "expected a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Status DependsOn(const Json& value, const std::string& field, std::map<std::string, ServiceCondition>* out) {
  if (!value.is_object()) return Bad(field, "expected an object of service: condition");
  for (const auto& [name, condition] : value.items()) {
    const std::string text = condition.is_string() ? condition.get<std::string>() : "";
    if (text == "service_started") (*out)[name] = ServiceCondition::kStarted;
    else if (text == "service_healthy") (*out)[name] = ServiceCondition::kHealthy;
    else if (text == "service_completed_successfully") (*out)[name] = ServiceCondition::kCompletedSuccessfully;
    else return Bad(field + "." + name, "expected service_started, service_healthy or service_completed_successfully");
  }
  return Status::Ok();
}

Status Mounts(const Json& value, const std::string& field, const std::set<std::string>& volumes,
              std::vector<sandbox::PodMount>* out) {
  if (!value.is_array()) return Bad(field, "expected a list of {source, target, read_only}");
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    const Json& m = value[i];
    if (!m.is_object() || !m.value("source", Json()).is_string() || !m.value("target", Json()).is_string()) {
      return Bad(at, "expected {source, target, read_only}");
    }
    sandbox::PodMount mount;
    const std::string source = m["source"].get<std::string>();
    mount.target = m["target"].get<std::string>();
    mount.read_only = m.value("read_only", false);
    if (mount.target.empty() || mount.target[0] != '/') return Bad(at + ".target", "must be an absolute path");
    if (!source.empty() && source[0] == '/') {
      mount.host_path = source;
    } else if (volumes.count(source)) {
      mount.volume = source;
    } else {
      return Bad(at + ".source", "\"" + source + "\" is neither an absolute host path nor one of pod.volumes");
    }
    out->push_back(std::move(mount));
  }
  return Status::Ok();
}

Result<sandbox::Healthcheck> ReadHealthcheck(const Json& value, const std::string& field) {
  if (!value.is_object()) return Bad(field, "expected an object");
  sandbox::Healthcheck check;
  auto test = Strings(value.value("test", Json()), field + ".test");
  if (!test.ok()) return test.status();
  if (test->size() < 2 || ((*test)[0] != "CMD" && (*test)[0] != "CMD-SHELL")) {
    return Bad(field + ".test", "expected [\"CMD\", ...] or [\"CMD-SHELL\", \"...\"]");
  }
  check.test = std::move(*test);
  check.interval_seconds = value.value("interval_sec", 30.0);
  check.timeout_seconds = value.value("timeout_sec", 30.0);
  check.start_period_seconds = value.value("start_period_sec", 0.0);
  check.retries = value.value("retries", 3);
  if (check.interval_seconds <= 0 || check.timeout_seconds <= 0 || check.retries < 1) {
    return Bad(field, "interval_sec and timeout_sec must be positive, retries at least 1");
  }
  return check;
}

Result<sandbox::PodService> ReadService(const std::string& name, const Json& s, const std::set<std::string>& volumes,
                                        tasks::ComposeEnv* env) {
  const std::string field = "pod.services." + name;
  if (!s.is_object()) return Bad(field, "expected an object");
  sandbox::PodService service;
  service.name = name;
  service.image = s.value("image", std::string());
  service.build_context = s.value("build", std::string());
  if (service.image.empty() == service.build_context.empty()) return Bad(field, "needs an image or a build, not both");
  for (const char* key : {"entrypoint", "command"}) {
    if (!s.contains(key)) continue;
    auto list = Strings(s[key], field + "." + key);
    if (!list.ok()) return list.status();
    (key[0] == 'e' ? service.entrypoint : service.command) = std::move(*list);
  }
  if (s.contains("environment")) {
    auto templates = tasks::ComposeEnvFromJson(s["environment"], field + ".environment");
    if (!templates.ok()) return templates.status();
    *env = std::move(*templates);
  }
  service.workdir = s.value("working_dir", std::string());
  service.user = s.value("user", std::string());
  if (s.contains("depends_on")) FORGE_RETURN_IF_ERROR(DependsOn(s["depends_on"], field + ".depends_on", &service.depends_on));
  if (s.contains("healthcheck")) {
    auto check = ReadHealthcheck(s["healthcheck"], field + ".healthcheck");
    if (!check.ok()) return check.status();
    service.healthcheck = std::move(*check);
  }
  if (s.contains("volumes")) FORGE_RETURN_IF_ERROR(Mounts(s["volumes"], field + ".volumes", volumes, &service.mounts));
  return service;
}

// Every dependency named exists, waits on a condition it can meet, and the
// graph has no cycle; returns the services in start order (dependencies
// first, else in name order).
Status Order(sandbox::Pod& pod) {
  std::map<std::string, sandbox::PodService> by_name;
  for (auto& s : pod.services) by_name.emplace(s.name, std::move(s));
  auto check = [&](const std::map<std::string, ServiceCondition>& deps, const std::string& field) -> Status {
    for (const auto& [dep, condition] : deps) {
      auto it = by_name.find(dep);
      if (it == by_name.end()) return Bad(field, "\"" + dep + "\" is not a service of the pod");
      if (condition == ServiceCondition::kHealthy && !it->second.healthcheck) {
        return Bad(field + "." + dep, "service_healthy, but service " + dep + " has no healthcheck");
      }
    }
    return Status::Ok();
  };
  FORGE_RETURN_IF_ERROR(check(pod.main_depends_on, "pod.main.depends_on"));
  for (const auto& [name, s] : by_name) {
    FORGE_RETURN_IF_ERROR(check(s.depends_on, "pod.services." + name + ".depends_on"));
  }
  std::vector<sandbox::PodService> ordered;
  std::map<std::string, int> state;  // 1 visiting, 2 done
  std::function<Status(const std::string&)> visit = [&](const std::string& name) -> Status {
    if (state[name] == 2) return Status::Ok();
    if (state[name] == 1) return Bad("pod.services." + name + ".depends_on", "a dependency cycle runs through it");
    state[name] = 1;
    for (const auto& [dep, condition] : by_name[name].depends_on) FORGE_RETURN_IF_ERROR(visit(dep));
    state[name] = 2;
    ordered.push_back(by_name[name]);
    return Status::Ok();
  };
  for (const auto& [name, s] : by_name) FORGE_RETURN_IF_ERROR(visit(name));
  pod.services = std::move(ordered);
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<const sandbox::Pod>> PodFromJson(const Json& json, PodEnv* env) {
  PodEnv unused;
  if (env == nullptr) env = &unused;
  if (!json.is_object()) return Bad("pod", "expected an object");
  auto pod = std::make_shared<sandbox::Pod>();
  std::set<std::string> volumes;
  if (json.contains("volumes")) {
    auto names = Strings(json["volumes"], "pod.volumes");
    if (!names.ok()) return names.status();
    pod->volumes = *names;
    volumes.insert(names->begin(), names->end());
  }
  const Json services = json.value("services", Json::object());
  if (!services.is_object()) return Bad("pod.services", "expected an object of services");
  for (const auto& [name, s] : services.items()) {
    if (name.empty() || name == "main" || name.find_first_of(" /:\t") != std::string::npos) {
      return Bad("pod.services", "\"" + name + "\" is not a usable service name");
    }
    auto service = ReadService(name, s, volumes, &env->services[name]);
    if (!service.ok()) return service.status();
    pod->services.push_back(std::move(*service));
  }
  const Json main = json.value("main", Json::object());
  if (!main.is_object()) return Bad("pod.main", "expected an object");
  if (main.contains("depends_on")) FORGE_RETURN_IF_ERROR(DependsOn(main["depends_on"], "pod.main.depends_on", &pod->main_depends_on));
  if (main.contains("volumes")) FORGE_RETURN_IF_ERROR(Mounts(main["volumes"], "pod.main.volumes", volumes, &pod->main_mounts));
  if (main.contains("healthcheck")) {
    auto check = ReadHealthcheck(main["healthcheck"], "pod.main.healthcheck");
    if (!check.ok()) return check.status();
    pod->main_healthcheck = std::move(*check);
  }
  if (main.contains("environment")) {
    auto templates = tasks::ComposeEnvFromJson(main["environment"], "pod.main.environment");
    if (!templates.ok()) return templates.status();
    env->main = std::move(*templates);
  }
  FORGE_RETURN_IF_ERROR(Order(*pod));
  return std::shared_ptr<const sandbox::Pod>(std::move(pod));
}

Result<std::shared_ptr<const sandbox::Pod>> ResolvePod(const sandbox::Pod& pod, const PodEnv& env,
                                                       const tasks::EnvLookup& lookup,
                                                       std::map<std::string, std::string>* main_env) {
  auto resolved = std::make_shared<sandbox::Pod>(pod);
  for (auto& service : resolved->services) {
    auto it = env.services.find(service.name);
    if (it == env.services.end()) continue;
    auto values = tasks::ResolveComposeEnv(it->second, "pod.services." + service.name + ".environment", lookup);
    if (!values.ok()) return values.status();
    service.env = std::move(*values);
  }
  auto main = tasks::ResolveComposeEnv(env.main, "pod.main.environment", lookup);
  if (!main.ok()) return main.status();
  for (auto& [k, v] : *main) (*main_env)[k] = std::move(v);
  return std::shared_ptr<const sandbox::Pod>(std::move(resolved));
}

std::vector<std::string> WithSandboxSkills(const std::string& src, const std::string& dest,
                                           const std::vector<std::string>& argv) {
  std::vector<std::string> out = {
      "/bin/sh", "-c",
      "if [ -d \"$2\" ]; then mkdir -p \"$1\" && cp -R \"$2\"/. \"$1\"/ || exit 125; fi; shift 2; exec \"$@\"",
      "forge-skills", dest, src};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Status ReadPodAndTools(const Json& task, TaskSpec* spec) {
  if (task.contains("pod")) {
    auto pod = PodFromJson(task["pod"], &spec->pod_env);
    if (!pod.ok()) return pod.status();
    spec->pod = *pod;
  }
  const Json env = task.value("environment", Json::object());
  if (!env.is_object()) return Status::Ok();
  auto servers = tasks::McpServersFromJson(env.contains("mcp_servers") ? &env["mcp_servers"] : nullptr,
                                           "environment.mcp_servers");
  if (!servers.ok()) return servers.status();
  spec->mcp_servers = std::move(*servers);
  if (env.contains("skills_dir")) {
    const Json& dir = env["skills_dir"];
    if (!dir.is_string() || dir.get<std::string>().empty() || dir.get<std::string>()[0] != '/') {
      return Bad("environment.skills_dir", "expected an absolute path in the sandbox");
    }
    spec->sandbox_skills_dir = dir.get<std::string>();
  }
  return Status::Ok();
}

}  // namespace forge::launch
