#include "sandbox/docker/image_pull.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace forge::sandbox::docker {
namespace {

using Json = nlohmann::json;

std::string Base64(const std::string& bytes, bool url_safe) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(n);
  if (url_safe) {
    for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  }
  return out;
}

Result<std::string> Unbase64(const std::string& text) {
  std::string out(3 * (text.size() / 4) + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return Status::BadConfig("not base64");
  out.resize(n);
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++pad;
  out.resize(out.size() - std::min(pad, out.size()));
  return out;
}

// Pull errors that a retry meets again.
bool Deterministic(const std::string& message) {
  for (const char* text : {"not found", "manifest unknown", "pull access denied", "unauthorized",
                           "denied", "invalid reference", "does not exist"}) {
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

std::string DefaultDockerConfig() {
  if (const char* dir = std::getenv("DOCKER_CONFIG"); dir != nullptr && *dir) return std::string(dir) + "/config.json";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.docker/config.json";
}

Result<std::string> RegistryAuth(const std::string& image, const std::string& config_path) {
  std::error_code ec;
  if (config_path.empty() || !std::filesystem::exists(config_path, ec)) return std::string();
  std::ifstream in(config_path);
  std::stringstream text;
  text << in.rdbuf();
  auto config = Json::parse(text.str(), nullptr, false);
  if (!in || !config.is_object()) return Status::BadConfig(config_path + ": not a readable JSON docker config");
  const ImageRef ref = ParseImageRef(image);
  const Json auths = config.value("auths", Json::object());
  if (!auths.is_object()) return Status::BadConfig(config_path + ": auths: expected an object");
  for (const std::string& key : {ref.registry, "https://" + ref.registry, "http://" + ref.registry,
                                 std::string(ref.registry == "docker.io" ? "https://index.docker.io/v1/" : "")}) {
    if (key.empty() || !auths.contains(key) || !auths[key].is_object()) continue;
    const Json& entry = auths[key];
    Json header = {{"serveraddress", ref.registry}};
    if (entry.contains("identitytoken") && entry["identitytoken"].is_string()) {
      header["identitytoken"] = entry["identitytoken"];
    } else if (entry.contains("auth") && entry["auth"].is_string()) {
      auto pair = Unbase64(entry["auth"].get<std::string>());
      const size_t sep = pair.ok() ? pair->find(':') : std::string::npos;
      if (sep == std::string::npos) return Status::BadConfig(config_path + ": auths." + key + ".auth: not base64 of user:password");
      header["username"] = pair->substr(0, sep);
      header["password"] = pair->substr(sep + 1);
    } else {
      continue;
    }
    return Base64(header.dump(), true);
  }
  return std::string();
}

Status PullImage(Engine& engine, const std::string& image, const std::string& registry_auth, double timeout_seconds) {
  const ImageRef ref = ParseImageRef(image);
  std::string path = "/images/create?fromImage=" + Engine::Escape(ref.repository);
  if (!ref.tag.empty()) path += "&tag=" + Engine::Escape(ref.tag);
  CallOptions options;
  options.timeout_seconds = timeout_seconds;
  std::vector<std::string> headers;
  if (!registry_auth.empty()) headers.push_back("X-Registry-Auth: " + registry_auth);
  auto response = engine.Call("POST", path, "", options, headers);
  if (!response.ok()) return response.status().Prefixed("pull " + image);
  if (response->status != 200) {
    Status status = StatusForHttp("pull " + image, *response);
    // The engine answers 404 for a missing repository or tag, and 500 for
    // some registries' "manifest unknown": not worth a retry either way.
    if (Deterministic(status.message())) return Status::NotFound(status.message());
    return status;
  }
  // JSON lines; an "error" line means the pull failed even though the status was 200.
  std::istringstream lines(response->body);
  for (std::string line; std::getline(lines, line);) {
    auto parsed = Json::parse(line, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("error")) continue;
    const std::string message = "Docker engine: pull " + image + ": " + parsed.value("error", std::string());
    return Deterministic(message) ? Status::NotFound(message) : Status::Busy(message);
  }
  return Status::Ok();
}

}  // namespace forge::sandbox::docker
