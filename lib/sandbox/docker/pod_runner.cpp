#include "sandbox/docker/pod_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace forge::sandbox::docker {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

int64_t Nanos(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

std::string LabelFilter(const std::vector<std::string>& labels) {
  return Engine::Escape(Json{{"label", labels}}.dump());
}

// The last lines a failed service printed, for the error message.
std::string LogTail(Engine& engine, const std::string& id) {
  auto logs = engine.Call("GET", "/containers/" + id + "/logs?stdout=1&stderr=1&tail=5");
  if (!logs.ok() || logs->status != 200) return "";
  std::string text;
  const std::string& body = logs->body;
  // Multiplexed frames: an 8-byte header, then the payload.
  for (size_t at = 0; at + 8 <= body.size();) {
    const size_t size = (static_cast<unsigned char>(body[at + 4]) << 24) |
                        (static_cast<unsigned char>(body[at + 5]) << 16) |
                        (static_cast<unsigned char>(body[at + 6]) << 8) | static_cast<unsigned char>(body[at + 7]);
    text += body.substr(at + 8, size);
    at += 8 + size;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.size() > 400 ? text.substr(text.size() - 400) : text;
}

}  // namespace

std::string PodRunner::VolumeName(const std::string& volume) const {
  return "forge-" + spec_.rollout_id + "-" + volume;
}

Json PodRunner::Labels() const {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  return {{"forge.managed", "1"}, {"forge.run", spec_.run_id}, {"forge.rollout", spec_.rollout_id},
          {kPodLabel, spec_.rollout_id},
          {"forge.deadline", std::to_string(now + std::max<int64_t>(1, spec_.lifetime_seconds))}};
}

Status PodRunner::Prepare(const ImageBuilder& build) {
  FORGE_RETURN_IF_ERROR(RemovePod(engine_, spec_.rollout_id, ""));
  for (const PodService& service : spec_.pod->services) {
    if (service.build_context.empty()) {
      images_[service.name] = service.image;
      continue;
    }
    auto built = build(service.build_context);
    if (!built.ok()) return built.status().Prefixed("service " + service.name);
    images_[service.name] = *built;
  }
  for (const std::string& volume : spec_.pod->volumes) {
    auto made = engine_.CallJson("POST", "/volumes/create", Json{{"Name", VolumeName(volume)}, {"Labels", Labels()}});
    if (!made.ok()) return made.status().Prefixed("create volume " + volume);
  }
  return Status::Ok();
}

Result<Json> PodRunner::Mounts(const std::vector<PodMount>& mounts) const {
  Json out = Json::array();
  for (const PodMount& m : mounts) {
    if (m.volume.empty()) {
      out.push_back({{"Type", "bind"}, {"Source", m.host_path}, {"Target", m.target}, {"ReadOnly", m.read_only}});
    } else {
      out.push_back({{"Type", "volume"}, {"Source", VolumeName(m.volume)}, {"Target", m.target}, {"ReadOnly", m.read_only}});
    }
  }
  return out;
}

Status PodRunner::AddToMain(Json& body) const {
  Json hosts = Json::array();
  for (const PodService& service : spec_.pod->services) hosts.push_back(service.name + ":127.0.0.1");
  body["HostConfig"]["ExtraHosts"] = hosts;
  body["Labels"][kPodLabel] = spec_.rollout_id;
  auto mounts = Mounts(spec_.pod->main_mounts);
  if (!mounts.ok()) return mounts.status();
  Json& all = body["HostConfig"]["Mounts"];
  if (!all.is_array()) all = Json::array();
  for (auto& m : *mounts) all.push_back(std::move(m));
  return Status::Ok();
}

Result<std::string> PodRunner::CreateService(const PodService& service, const std::string& main_id,
                                             int64_t nano_cpus) {
  Json env = Json::array();
  for (const auto& [k, v] : service.env) env.push_back(k + "=" + v);
  Json labels = Labels();
  labels["forge.service"] = service.name;
  // The main container's limits; Docker's default capabilities, as compose
  // gives a service; the main container's network namespace.
  Json host = {{"NetworkMode", "container:" + main_id},
               {"NanoCpus", nano_cpus},
               {"Memory", spec_.limits.memory_bytes},
               {"MemorySwap", spec_.limits.memory_bytes},
               {"PidsLimit", spec_.limits.pids},
               {"SecurityOpt", {"no-new-privileges"}}};
  auto mounts = Mounts(service.mounts);
  if (!mounts.ok()) return mounts.status();
  if (!mounts->empty()) host["Mounts"] = std::move(*mounts);
  Json body = {{"Image", images_[service.name]}, {"Env", env}, {"Labels", labels}, {"HostConfig", host}};
  if (service.entrypoint) body["Entrypoint"] = *service.entrypoint;
  if (service.command) body["Cmd"] = *service.command;
  if (!service.workdir.empty()) body["WorkingDir"] = service.workdir;
  if (!service.user.empty()) body["User"] = service.user;
  if (service.healthcheck) {
    const Healthcheck& h = *service.healthcheck;
    body["Healthcheck"] = {{"Test", h.test},
                           {"Interval", Nanos(h.interval_seconds)},
                           {"Timeout", Nanos(h.timeout_seconds)},
                           {"Retries", h.retries},
                           {"StartPeriod", Nanos(h.start_period_seconds)}};
  }
  const std::string name = "forge-" + spec_.rollout_id + "-" + service.name;
  auto created = engine_.CallJson("POST", "/containers/create?name=" + Engine::Escape(name), body);
  if (!created.ok()) {
    if (created.status().kind() == Kind::kNotFound) {
      return Status::Unavailable(created.status().message() + " (image " + images_[service.name] +
                                 " of service " + service.name + " missing: pull or build it first)");
    }
    return created.status().Prefixed("create service " + service.name);
  }
  return (*created)["Id"].get<std::string>();
}

Status PodRunner::Start(const std::string& main_id, int64_t nano_cpus) {
  for (const PodService& service : spec_.pod->services) {
    for (const auto& [dep, condition] : service.depends_on) FORGE_RETURN_IF_ERROR(WaitFor(dep, condition));
    auto id = CreateService(service, main_id, nano_cpus);
    if (!id.ok()) return id.status();
    ids_[service.name] = *id;
    auto started = engine_.CallJson("POST", "/containers/" + *id + "/start");
    if (!started.ok()) return started.status().Prefixed("start service " + service.name);
  }
  for (const auto& [dep, condition] : spec_.pod->main_depends_on) FORGE_RETURN_IF_ERROR(WaitFor(dep, condition));
  return Status::Ok();
}

Status PodRunner::WaitFor(const std::string& name, ServiceCondition condition) {
  const std::string id = ids_[name];
  double budget = 600;
  for (const PodService& s : spec_.pod->services) {
    if (s.name == name && s.healthcheck && condition == ServiceCondition::kHealthy) {
      const Healthcheck& h = *s.healthcheck;
      budget = h.start_period_seconds + (h.interval_seconds + h.timeout_seconds) * (h.retries + 1) + 30;
    }
  }
  const auto until = Clock::now() + std::chrono::duration<double>(budget);
  const std::string what = "service " + name + " (" + ConditionName(condition) + ")";
  for (int i = 0;; ++i) {
    auto inspect = engine_.CallJson("GET", "/containers/" + id + "/json");
    if (!inspect.ok()) return inspect.status().Prefixed(what);
    const Json state = inspect->value("State", Json::object());
    const std::string status = state.value("Status", "");
    const int exit_code = state.value("ExitCode", -1);
    const std::string health = state.value("/Health/Status"_json_pointer, std::string());
    if (condition == ServiceCondition::kStarted && status != "created") return Status::Ok();
    if (condition == ServiceCondition::kHealthy && health == "healthy") return Status::Ok();
    if (condition == ServiceCondition::kCompletedSuccessfully && status == "exited" && exit_code == 0) {
      return Status::Ok();
    }
    if (status == "exited" || status == "dead") {
      return Status::Unavailable(what + ": exited with status " + std::to_string(exit_code) + ": " +
                                 LogTail(engine_, id));
    }
    if (health == "unhealthy") {
      const Json log = state.value("/Health/Log"_json_pointer, Json::array());
      const std::string output = log.empty() ? "" : log.back().value("Output", "");
      return Status::Unavailable(what + ": unhealthy: " + output.substr(0, 300));
    }
    if (Clock::now() > until) return Status::Unavailable(what + ": not reached in " + std::to_string(int(budget)) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(i < 20 ? 50 : 200));
  }
}

Status RemovePod(Engine& engine, const std::string& pod, const std::string& keep_id) {
  const std::string filter = LabelFilter({std::string(kPodLabel) + "=" + pod});
  auto listed = engine.CallJson("GET", "/containers/json?all=1&filters=" + filter);
  if (!listed.ok()) return listed.status().Prefixed("list pod " + pod);
  for (const auto& container : *listed) {
    const std::string id = container.value("Id", "");
    if (id.empty() || id == keep_id) continue;
    auto removed = engine.Call("DELETE", "/containers/" + id + "?force=1&v=1");
    if (!removed.ok()) return removed.status();
    if (removed->status != 204 && removed->status != 404 && removed->status != 409) {
      return StatusForHttp("remove service container " + id, *removed);
    }
  }
  auto volumes = engine.CallJson("GET", "/volumes?filters=" + filter);
  if (!volumes.ok()) return volumes.status().Prefixed("list pod volumes");
  for (const auto& volume : volumes->value("Volumes", Json::array())) {
    // A volume still held by main (removed after this) goes with gc.
    (void)engine.Call("DELETE", "/volumes/" + Engine::Escape(volume.value("Name", "")) + "?force=1");
  }
  return Status::Ok();
}

Result<int> CollectVolumes(Engine& engine, const std::string& run_id) {
  std::vector<std::string> labels = {"forge.managed=1"};
  if (!run_id.empty()) labels.push_back("forge.run=" + run_id);
  auto volumes = engine.CallJson("GET", "/volumes?filters=" + LabelFilter(labels));
  if (!volumes.ok()) return volumes.status().Prefixed("list volumes");
  int removed = 0;
  for (const auto& volume : volumes->value("Volumes", Json::array())) {
    auto gone = engine.Call("DELETE", "/volumes/" + Engine::Escape(volume.value("Name", "")));
    if (gone.ok() && gone->status == 204) ++removed;
  }
  return removed;
}

}  // namespace forge::sandbox::docker
