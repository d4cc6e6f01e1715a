#include "sandbox/k8s/supervised.h"

#include "sandbox/box_protocol.h"
#include "sandbox/tar.h"

namespace forge::sandbox::k8s {
namespace {

using Json = nlohmann::json;

constexpr const char* kBinVolume = "forge-bin";
constexpr const char* kRunVolume = "forge-run";
constexpr const char* kInitName = "forge-box";

std::string Number(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

// Entries each ended by a NUL, as the supervisor reads them.
std::string NulList(const std::vector<std::string>& entries) {
  std::string text;
  for (const auto& e : entries) text.append(e).push_back('\0');
  return text;
}

std::string Relative(const std::string& path) {
  std::string out = path;
  while (!out.empty() && out.front() == '/') out.erase(0, 1);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

void AddSupervisor(const Supervision& s, Json& pod_spec, Json& container) {
  const std::string box = kBoxSandboxPath;
  Json init = {
      {"name", kInitName},
      {"image", s.box_image},
      {"imagePullPolicy", container.value("imagePullPolicy", "IfNotPresent")},
      {"command", {"/forge-box", "install", box}},
      {"volumeMounts", {{{"name", kBinVolume}, {"mountPath", kBoxDir}}}},
      // The pod's requests are the larger of an init container's and the
      // sum of the others': the same figures keep Guaranteed QoS, cost nothing.
      {"resources", container["resources"]},
      {"securityContext", container["securityContext"]},
  };
  Json& inits = pod_spec["initContainers"];
  if (!inits.is_array()) inits = Json::array();
  inits.insert(inits.begin(), init);  // before any sidecar: the box is there first
  Json& volumes = pod_spec["volumes"];
  if (!volumes.is_array()) volumes = Json::array();
  volumes.push_back({{"name", kBinVolume}, {"emptyDir", Json::object()}});
  volumes.push_back({{"name", kRunVolume}, {"emptyDir", Json::object()}});
  Json& mounts = container["volumeMounts"];
  if (!mounts.is_array()) mounts = Json::array();
  mounts.push_back({{"name", kBinVolume}, {"mountPath", kBoxDir}, {"readOnly", true}});
  mounts.push_back({{"name", kRunVolume}, {"mountPath", kSuperviseDir}});
  Json command = {box, "supervise", "--wait", Number(s.wait_seconds), "--max-output",
                  std::to_string(s.max_output_bytes)};
  if (s.timeout_seconds > 0) command.insert(command.end(), {"--timeout", Number(s.timeout_seconds)});
  if (s.hold_seconds > 0) command.insert(command.end(), {"--hold", std::to_string(s.hold_seconds)});
  if (container.contains("workingDir")) command.insert(command.end(), {"--workdir", container["workingDir"]});
  container["command"] = command;
  container.erase("args");
  // The supervisor's status line is the message; never the log's tail.
  container["terminationMessagePolicy"] = "File";
  if (s.hold_seconds > 0) {
    container["readinessProbe"] = {{"exec", {{"command", {box, "done"}}}},
                                   {"periodSeconds", 1},
                                   {"successThreshold", 1},
                                   {"failureThreshold", 1}};
  }
}

bool IsSupervised(const Json& pod) {
  const Json* inits = pod.contains("spec") ? &pod["spec"] : nullptr;
  if (inits == nullptr || !inits->contains("initContainers") || !(*inits)["initContainers"].is_array()) return false;
  for (const Json& c : (*inits)["initContainers"]) {
    if (c.value("name", "") == kInitName) return true;
  }
  return false;
}

Result<std::string> SetupArchive(const OneShot& job) {
  TarWriter tar;
  for (const auto& [host, dest] : job.copies) FORGE_RETURN_IF_ERROR(AddCopy(tar, host, Relative(dest)));
  for (const auto& [path, content] : job.files) tar.AddFile(Relative(path), content, 0644);
  const std::string run = Relative(kSuperviseDir);
  std::vector<std::string> env;
  for (const auto& [k, v] : job.exec.env) env.push_back(k + "=" + v);
  tar.AddFile(run + "/" + kSuperviseEnv, NulList(env), 0600);
  tar.AddFile(run + "/" + kSuperviseArgv, NulList(job.exec.argv), 0600);
  tar.AddFile(run + "/" + kSuperviseGo, "", 0600);  // last: the supervisor starts on it
  return tar.Finish();
}

std::vector<std::string> SetupCommand() { return {"tar", "-x", "-o", "-f", "-", "-C", "/"}; }

}  // namespace forge::sandbox::k8s
