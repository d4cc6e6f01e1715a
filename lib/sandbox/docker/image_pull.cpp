#include "sandbox/docker/image_pull.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "base/base64.h"
#include "base/json_field.h"
#include "base/subprocess.h"

namespace forge::sandbox::docker {
namespace {

using Json = nlohmann::json;

// Pull errors that a retry meets again.
bool Deterministic(const std::string& message) {
  for (const char* text : {"not found", "manifest unknown", "pull access denied", "unauthorized",
                           "no basic auth credentials", "authentication required", "denied",
                           "invalid reference", "does not exist"}) {
    if (message.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

bool RegistryErrorIsTransient(const std::string& message) {
  if (Deterministic(message)) return false;
  for (const char* text : {"dial tcp", "connection refused", "connection reset", "i/o timeout",
                           "TLS handshake timeout", "toomanyrequests", "Too Many Requests",
                           "502 Bad Gateway", "503 Service Unavailable", "504 Gateway Timeout",
                           "unexpected EOF", "Client.Timeout exceeded", "request canceled"}) {
    if (message.find(text) != std::string::npos) return true;
  }
  return false;
}

ImageRef ParseImageRef(const std::string& image) {
  ImageRef ref;
  const size_t slash = image.find('/');
  const std::string first = slash == std::string::npos ? "" : image.substr(0, slash);
  const bool has_registry = !first.empty() && (first.find_first_of(".:") != std::string::npos || first == "localhost");
  ref.registry = has_registry ? first : "docker.io";
  ref.repository = image;
  const size_t at = image.find('@');
  const size_t colon = image.rfind(':');
  const size_t last_slash = image.rfind('/');
  if (at == std::string::npos && colon != std::string::npos &&
      (last_slash == std::string::npos || colon > last_slash)) {
    ref.repository = image.substr(0, colon);
    ref.tag = image.substr(colon + 1);
  }
  if (ref.tag.empty() && at == std::string::npos) ref.tag = "latest";
  return ref;
}

std::string DefaultDockerConfig(const Env& env) {
  if (std::string dir = env.VarOr("DOCKER_CONFIG", ""); !dir.empty()) return dir + "/config.json";
  return env.Var("HOME").value_or("") + "/.docker/config.json";
}

namespace {

Result<Json> ReadDockerConfig(const std::string& config_path) {
  std::error_code ec;
  if (config_path.empty() || !std::filesystem::exists(config_path, ec)) return Json::object();
  std::ifstream in(config_path);
  std::stringstream text;
  text << in.rdbuf();
  auto config = Json::parse(text.str(), nullptr, false);
  if (!in || !config.is_object()) return Status::BadConfig(config_path + ": not a readable JSON docker config");
  for (const char* key : {"auths", "credHelpers"}) {
    if (config.contains(key) && !config[key].is_object()) {
      return Status::BadConfig(config_path + ": " + key + ": expected an object");
    }
  }
  return config;
}

// The key a registry has in "auths" and "credHelpers": Docker Hub's is its
// v1 URL; others are the host, sometimes written as a URL.
std::vector<std::string> ConfigKeys(const std::string& registry) {
  if (registry == "docker.io") return {"https://index.docker.io/v1/", "docker.io", "index.docker.io"};
  return {registry, "https://" + registry, "http://" + registry};
}

// Asks docker-credential-HELPER for server's credentials, as the docker CLI
// does: the server on stdin, {"Username", "Secret"} on stdout ("<token>" as
// the user name means Secret is an identity token). None stored: null.
Result<Json> FromHelper(const std::string& helper, const std::string& server, const std::string& config_path) {
  const std::string program = "docker-credential-" + helper;
  auto ran = RunCapture({program, "get"}, server);
  if (!ran.ok()) return Status::BadConfig(config_path + ": credential helper " + program + ": " + ran.status().message());
  if (ran->exit_code != 0) {
    if (ran->out.find("credentials not found") != std::string::npos) return Json(nullptr);
    std::string said = ran->out.substr(0, 200);
    while (!said.empty() && said.back() == '\n') said.pop_back();
    return Status::BadConfig(fmt::format("{}: credential helper {} get {}: exit {}{}", config_path, program, server,
                                         ran->exit_code, said.empty() ? "" : ": " + said));
  }
  auto answer = Json::parse(ran->out, nullptr, false);
  const std::string user = answer.is_object() ? JsonText(answer, "Username") : "";
  const std::string secret = answer.is_object() ? JsonText(answer, "Secret") : "";
  if (secret.empty()) return Status::BadConfig(config_path + ": credential helper " + program + ": no Secret in its answer");
  if (user == "<token>") return Json{{"identitytoken", secret}};
  return Json{{"username", user}, {"password", secret}};
}

// Credentials for one registry, in the Engine API's AuthConfig form (null:
// none, pull anonymously). As the docker CLI looks: credHelpers, then
// credsStore, then the file's own "auth".
Result<Json> Credentials(const Json& config, const std::string& registry, const std::string& config_path) {
  const Json helpers = config.value("credHelpers", Json::object());
  const Json auths = config.value("auths", Json::object());
  for (const std::string& key : ConfigKeys(registry)) {
    if (helpers.contains(key) && helpers[key].is_string()) return FromHelper(helpers[key], key, config_path);
  }
  if (config.contains("credsStore") && config["credsStore"].is_string() && !config["credsStore"].get<std::string>().empty()) {
    auto stored = FromHelper(config["credsStore"], ConfigKeys(registry).front(), config_path);
    if (!stored.ok() || !stored->is_null()) return stored;
  }
  for (const std::string& key : ConfigKeys(registry)) {
    if (!auths.contains(key) || !auths[key].is_object()) continue;
    const Json& entry = auths[key];
    if (entry.contains("identitytoken") && entry["identitytoken"].is_string()) {
      return Json{{"identitytoken", entry["identitytoken"]}};
    }
    if (!entry.contains("auth") || !entry["auth"].is_string()) continue;
    auto pair = Base64Decode(entry["auth"].get<std::string>());
    const size_t sep = pair.ok() ? pair->find(':') : std::string::npos;
    if (sep == std::string::npos) return Status::BadConfig(config_path + ": auths." + key + ".auth: not base64 of user:password");
    return Json{{"username", pair->substr(0, sep)}, {"password", pair->substr(sep + 1)}};
  }
  return Json(nullptr);
}

// The credentials for image's registry from the docker config at
// config_path (null: none), with "serveraddress" set to the registry.
Result<Json> CredentialsFor(const std::string& image, const std::string& config_path) {
  auto config = ReadDockerConfig(config_path);
  if (!config.ok()) return config.status();
  const std::string registry = ParseImageRef(image).registry;
  auto credentials = Credentials(*config, registry, config_path);
  if (credentials.ok() && !credentials->is_null()) (*credentials)["serveraddress"] = registry;
  return credentials;
}

}  // namespace

Result<std::string> RegistryAuth(const std::string& image, const std::string& config_path) {
  auto credentials = CredentialsFor(image, config_path);
  if (!credentials.ok()) return credentials.status();
  return credentials->is_null() ? std::string() : Base64Encode(credentials->dump(), true);
}

Result<std::string> PullSecretDockerConfig(const std::vector<std::string>& images, const std::string& config_path) {
  auto config = ReadDockerConfig(config_path);
  if (!config.ok()) return config.status();
  Json auths = Json::object();
  std::set<std::string> registries;
  for (const std::string& image : images) {
    const std::string registry = ParseImageRef(image).registry;
    if (!registries.insert(registry).second) continue;
    auto credentials = Credentials(*config, registry, config_path);
    if (!credentials.ok()) return credentials.status();
    if (credentials->is_null()) continue;  // this registry's images pull anonymously
    if (!credentials->contains("username")) {
      return Status::BadConfig(config_path + ": the credentials for " + registry + " (image " + image +
                               ") are an identity token, which a kubelet cannot pull with; make the pull Secret "
                               "yourself and name it with --k8s-image-pull-secret");
    }
    const std::string user = (*credentials)["username"], password = (*credentials)["password"];
    // Docker Hub's key is its v1 URL, as docker login and kubectl write it.
    auths[ConfigKeys(registry).front()] = {{"username", user}, {"password", password},
                                           {"auth", Base64Encode(user + ":" + password)}};
  }
  return auths.empty() ? std::string() : Json{{"auths", std::move(auths)}}.dump();
}

Result<std::string> BuildRegistryConfig(const std::string& config_path) {
  auto config = ReadDockerConfig(config_path);
  if (!config.ok()) return config.status();
  Json all = Json::object();
  for (const char* section : {"auths", "credHelpers"}) {
    const Json entries = config->value(section, Json::object());
    for (const auto& [key, value] : entries.items()) {
      std::string registry = key;
      for (const char* scheme : {"https://", "http://"}) {
        if (registry.rfind(scheme, 0) == 0) registry = registry.substr(std::strlen(scheme));
      }
      if (registry.find('/') != std::string::npos) registry = registry.substr(0, registry.find('/'));
      if (registry == "index.docker.io") registry = "docker.io";
      if (all.contains(key)) continue;
      auto credentials = Credentials(*config, registry, config_path);
      if (!credentials.ok()) return credentials.status();
      if (credentials->is_null()) continue;
      (*credentials)["serveraddress"] = key;
      all[key] = std::move(*credentials);
    }
  }
  return all.empty() ? std::string() : Base64Encode(all.dump(), true);
}

void PullProgress::Feed(std::string_view bytes) {
  lines_.Feed(bytes, [this](std::string_view line) { Line(line); });
}

void PullProgress::Line(std::string_view text) {
  auto line = Json::parse(text, nullptr, false);
  if (!line.is_object()) return;
  if (line.contains("error")) {
    if (error_.empty()) error_ = JsonText(line, "error");
    if (error_.empty()) error_ = "an error without a message";
    return;
  }
  const std::string id = JsonText(line, "id");
  const std::string status = JsonText(line, "status");
  // "Pulling from REPO" carries the tag as its id; layers are the other ids.
  if (id.empty() || status.rfind("Pulling from", 0) == 0) return;
  Layer& layer = layers_[id];
  if (status == "Downloading" && line.contains("progressDetail") && line["progressDetail"].is_object()) {
    const Json& detail = line["progressDetail"];
    layer.total = std::max(layer.total, JsonInt(detail, "total", 0));
    layer.current = std::max(layer.current, JsonInt(detail, "current", 0));
  } else if (status == "Download complete" || status == "Pull complete" || status == "Already exists") {
    layer.current = layer.total;
  }
}

int64_t PullProgress::done_bytes() const {
  int64_t sum = 0;
  for (const auto& [id, layer] : layers_) sum += layer.current;
  return sum;
}

int64_t PullProgress::total_bytes() const {
  int64_t sum = 0;
  for (const auto& [id, layer] : layers_) sum += layer.total;
  return sum;
}

Result<ProgressAnswer> PostWithProgress(Engine& engine, const std::string& path,
                                        const std::vector<std::string>& headers, double timeout_seconds,
                                        const std::string& what, PullProgress& progress,
                                        const std::function<void(const PullProgress&)>& on_progress) {
  constexpr size_t kHeadBytes = 65536;
  ProgressAnswer answer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  auto status = engine.Stream(
      "POST", path, "",
      [&](std::string_view bytes) {
        if (answer.head.size() < kHeadBytes) answer.head.append(bytes.substr(0, kHeadBytes - answer.head.size()));
        progress.Feed(bytes);
        if (on_progress) on_progress(progress);
      },
      [&] { return timeout_seconds <= 0 || std::chrono::steady_clock::now() < deadline; }, headers);
  if (!status.ok() && status.status().kind() == Kind::kCancelled) {
    return Status::Unavailable(fmt::format("Docker engine: {}: not done after {:g} s", what, timeout_seconds));
  }
  if (!status.ok()) return status.status().Prefixed(what);
  answer.status = *status;
  return answer;
}

Status PullImage(Engine& engine, const std::string& image, const std::string& registry_auth, double timeout_seconds,
                 const std::function<void(const PullProgress&)>& on_progress) {
  const ImageRef ref = ParseImageRef(image);
  std::string path = "/images/create?fromImage=" + Engine::Escape(ref.repository);
  if (!ref.tag.empty()) path += "&tag=" + Engine::Escape(ref.tag);
  std::vector<std::string> headers;
  if (!registry_auth.empty()) headers.push_back("X-Registry-Auth: " + registry_auth);
  const std::string what = "pull " + image;
  PullProgress progress;
  auto answer = PostWithProgress(engine, path, headers, timeout_seconds, what, progress, on_progress);
  if (!answer.ok()) return answer.status();
  if (answer->status != 200) {
    Status failed = StatusForHttp(what, HttpResponse{answer->status, answer->head, "application/json"});
    // The engine answers 404 for a missing repository or tag, and 500 for
    // some registries' "manifest unknown": not worth a retry either way.
    if (Deterministic(failed.message())) return Status::NotFound(failed.message());
    return failed;
  }
  // An "error" line means the pull failed even though the status was 200.
  if (!progress.error().empty()) {
    const std::string message = "Docker engine: " + what + ": " + progress.error();
    return Deterministic(message) ? Status::NotFound(message) : Status::Busy(message);
  }
  return Status::Ok();
}

}  // namespace forge::sandbox::docker
