#include "sandbox/docker/registry.h"

#include <curl/curl.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "sandbox/docker/image_pull.h"

namespace forge::sandbox::docker {
namespace {

constexpr const char* kManifestTypes =
    "Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.docker.distribution.manifest.v2+json";

struct RegistryAnswer {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lowercase names
};

size_t RegistryBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

size_t RegistryHeader(char* data, size_t size, size_t count, void* user) {
  std::string line(data, size * count);
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ')) value.erase(0, 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
    (*static_cast<std::map<std::string, std::string>*>(user))[name] = value;
  }
  return size * count;
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

// How a registry's HTTPS is checked: verify (or not: an insecure loopback
// registry with no CA given), against ca_pem (the system's CAs and the
// registry's) when there is one, else curl's default bundle.
struct Tls {
  bool verify = true;
  std::string ca_pem;
};

Result<RegistryAnswer> Request(const std::string& method, const std::string& url,
                               const std::vector<std::string>& header_lines, const Tls& tls,
                               double timeout_seconds) {
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) return Status::Internal("libcurl: no handle");
  RegistryAnswer answer;
  curl_slist* headers = nullptr;
  for (const auto& h : header_lines) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_seconds * 1000));
  if (method == "HEAD") curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
  if (!tls.verify) {
    curl_easy_setopt(curl.get(), CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl.get(), CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_blob ca{const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_NOCOPY};
  if (!tls.ca_pem.empty()) curl_easy_setopt(curl.get(), CURLOPT_CAINFO_BLOB, &ca);
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, RegistryBody);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, RegistryHeader);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &answer.headers);
  const CURLcode code = curl_easy_perform(curl.get());
  curl_slist_free_all(headers);
  if (code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE) {
    return Status::BadConfig(fmt::format("{}: its TLS certificate is not trusted ({}): give the CA that signs it "
                                         "with --registry-ca, or put it in the engine's certs.d",
                                         url, curl_easy_strerror(code)));
  }
  if (code == CURLE_SSL_CONNECT_ERROR) return Status::Protocol(fmt::format("{}: {}", url, curl_easy_strerror(code)));
  if (code != CURLE_OK) return Status::Unavailable(fmt::format("{}: {}", url, curl_easy_strerror(code)));
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

Result<std::string> ReadPem(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status::BadConfig(what + " " + path + ": not readable");
  return text.str();
}

// The system's CA bundle, as curl would use it.
std::string SystemCas() {
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  char* path = nullptr;
  if (curl) curl_easy_getinfo(curl.get(), CURLINFO_CAINFO, &path);
  auto pem = ReadPem(path ? path : "/etc/ssl/certs/ca-certificates.crt", "the system CA bundle");
  return pem.ok() ? *pem : "";
}

// The registry's CA (RegistryTls), with the system's: "" when it has none.
Result<std::string> RegistryCas(const std::string& registry, const RegistryTls& tls) {
  std::string ca_file = tls.ca_file;
  std::error_code ec;
  const std::string certs_d = tls.certs_dir + "/" + registry + "/ca.crt";
  if (ca_file.empty() && !tls.certs_dir.empty() && std::filesystem::is_regular_file(certs_d, ec)) ca_file = certs_d;
  if (ca_file.empty()) return std::string();
  auto pem = ReadPem(ca_file, tls.ca_file.empty() ? "the engine's certs.d CA" : "--registry-ca");
  if (!pem.ok()) return pem.status();
  return SystemCas() + "\n" + *pem;
}

bool Loopback(const std::string& host) {
  const std::string name = host.substr(0, host.rfind(':') == std::string::npos ? host.size() : host.rfind(':'));
  return name == "localhost" || name.rfind("127.", 0) == 0 || name == "[::1]";
}

// The user's credentials for the registry: {"username","password"} or
// {"identitytoken"}, from RegistryAuth's (URL-safe base64 JSON) value.
nlohmann::json DecodeAuth(const std::string& registry_auth) {
  std::string text = registry_auth;
  for (char& c : text) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (text.size() % 4 != 0) text += '=';
  auto decoded = Base64Decode(text);
  if (!decoded.ok()) return nlohmann::json::object();
  auto json = nlohmann::json::parse(*decoded, nullptr, false);
  return json.is_object() ? json : nlohmann::json::object();
}

std::string Field(const nlohmann::json& json, const char* name) {
  return json.contains(name) && json[name].is_string() ? json[name].get<std::string>() : "";
}

std::string BasicHeader(const nlohmann::json& auth) {
  if (Field(auth, "username").empty()) return "";
  return "Authorization: Basic " + Base64Encode(Field(auth, "username") + ":" + Field(auth, "password"));
}

// The Authorization header a 401's challenge asks for, or "" when there is
// nothing to offer it.
Result<std::string> Answer(const std::string& challenge, const nlohmann::json& auth, const Tls& tls,
                           double timeout_seconds) {
  auto params = ParseChallenge(challenge);
  std::string scheme = params[""];
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "basic") return BasicHeader(auth);
  if (scheme != "bearer" || params["realm"].empty()) return std::string();
  std::string url = params["realm"] + "?service=" + params["service"];
  if (!params["scope"].empty()) url += "&scope=" + params["scope"];
  std::vector<std::string> headers;
  if (const std::string basic = BasicHeader(auth); !basic.empty()) headers.push_back(basic);
  auto token = Request("GET", url, headers, tls, timeout_seconds);
  if (!token.ok()) return token.status().Prefixed("registry token");
  if (token->status != 200) {
    return Status::BadConfig(fmt::format("registry token from {}: HTTP {}: {}", params["realm"], token->status,
                                         token->body.substr(0, 300)));
  }
  auto json = nlohmann::json::parse(token->body, nullptr, false);
  std::string value = json.is_object() ? Field(json, "token") : "";
  if (value.empty() && json.is_object()) value = Field(json, "access_token");
  if (value.empty()) return Status::Protocol("registry token from " + params["realm"] + ": no token in the answer");
  return "Authorization: Bearer " + value;
}

}  // namespace

std::map<std::string, std::string> ParseChallenge(const std::string& header) {
  std::map<std::string, std::string> out;
  size_t pos = header.find(' ');
  out[""] = header.substr(0, pos);
  while (pos != std::string::npos && pos < header.size()) {
    while (pos < header.size() && (header[pos] == ' ' || header[pos] == ',')) ++pos;
    const size_t eq = header.find('=', pos);
    if (eq == std::string::npos) break;
    const std::string name = header.substr(pos, eq - pos);
    std::string value;
    pos = eq + 1;
    if (pos < header.size() && header[pos] == '"') {
      const size_t close = header.find('"', pos + 1);
      value = header.substr(pos + 1, close == std::string::npos ? std::string::npos : close - pos - 1);
      pos = close == std::string::npos ? header.size() : close + 1;
    } else {
      const size_t comma = header.find(',', pos);
      value = header.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma;
    }
    out[name] = value;
  }
  return out;
}

Result<std::optional<std::string>> ManifestDigest(const std::string& image, const std::string& registry_auth,
                                                  const RegistryTls& registry_tls, double timeout_seconds) {
  const ImageRef ref = ParseImageRef(image);
  const std::string name = ref.repository.substr(ref.registry.size() + 1);
  const std::string path = "/v2/" + name + "/manifests/" + ref.tag;
  const std::string what = "registry " + ref.registry + ": HEAD " + path;
  auto cas = RegistryCas(ref.registry, registry_tls);
  if (!cas.ok()) return cas.status().Prefixed("registry " + ref.registry);
  // An insecure (loopback) registry with no CA: HTTPS unverified, then HTTP.
  const bool insecure = Loopback(ref.registry) && cas->empty();
  const Tls tls{!insecure, *cas};
  std::string url = "https://" + ref.registry + path;
  std::vector<std::string> headers = {kManifestTypes};
  auto head = [&]() -> Result<RegistryAnswer> {
    auto answer = Request("HEAD", url, headers, tls, timeout_seconds);
    if (!answer.ok() && insecure && answer.status().kind() == Kind::kProtocol && url.rfind("https://", 0) == 0) {
      url = "http://" + ref.registry + path;  // it does not speak TLS
      answer = Request("HEAD", url, headers, tls, timeout_seconds);
    }
    if (answer.ok()) return answer;
    if (answer.status().kind() == Kind::kBadConfig) return answer.status().Prefixed(what);
    return Status::Unavailable(what + ": unreachable: " + answer.status().message());
  };
  auto answer = head();
  if (!answer.ok()) return answer.status();
  if (answer->status == 401 && answer->headers.count("www-authenticate")) {
    auto authorization = Answer(answer->headers["www-authenticate"], DecodeAuth(registry_auth), tls, timeout_seconds);
    if (!authorization.ok()) return authorization.status().Prefixed(what);
    if (!authorization->empty()) {
      headers.push_back(*authorization);
      answer = head();
      if (!answer.ok()) return answer.status();
    }
  }
  if (answer->status == 404) return std::optional<std::string>();
  if (answer->status == 200) {
    const std::string digest = answer->headers["docker-content-digest"];
    if (digest.rfind("sha256:", 0) != 0) return Status::Protocol(what + ": no Docker-Content-Digest in the answer");
    return std::optional<std::string>(digest);
  }
  const std::string why = fmt::format("{}: HTTP {}", what, answer->status);
  if (answer->status == 401 || answer->status == 403) {
    return Status::BadConfig(why + (registry_auth.empty() ? " (no credentials for it in the docker config)"
                                                          : " (the docker config's credentials were refused)"));
  }
  if (answer->status == 429 || answer->status >= 500) return Status::Unavailable(why);
  return Status::Protocol(why);
}

}  // namespace forge::sandbox::docker
