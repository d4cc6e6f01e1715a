// Image references and registry credentials for forge-launch's pulls.
#include <doctest/doctest.h>
#include <openssl/evp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sandbox/docker/image_pull.h"
#include "support/temp_dir.h"

using forge::sandbox::docker::ParseImageRef;
using forge::sandbox::docker::RegistryAuth;
using forge::sandbox::docker::RegistryErrorIsTransient;

namespace {

std::string Decode(std::string text) {
  for (char& c : text) c = c == '-' ? '+' : c == '_' ? '/' : c;
  std::string out(3 * (text.size() / 4) + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  out.resize(n > 0 ? n : 0);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("image references split into registry, repository and tag") {
  auto ref = ParseImageRef("127.0.0.1:5000/forge/busybox:1");
  CHECK(ref.registry == "127.0.0.1:5000");
  CHECK(ref.repository == "127.0.0.1:5000/forge/busybox");
  CHECK(ref.tag == "1");
  ref = ParseImageRef("127.0.0.1:5000/forge/busybox");
  CHECK(ref.repository == "127.0.0.1:5000/forge/busybox");
  CHECK(ref.tag == "latest");
  ref = ParseImageRef("python:3.12");
  CHECK(ref.registry == "docker.io");
  CHECK(ref.repository == "python");
  CHECK(ref.tag == "3.12");
  ref = ParseImageRef("ghcr.io/org/img@sha256:abc");
  CHECK(ref.registry == "ghcr.io");
  CHECK(ref.repository == "ghcr.io/org/img@sha256:abc");
  CHECK(ref.tag.empty());
  CHECK(ParseImageRef("localhost/x").registry == "localhost");
}

TEST_CASE("registry credentials come from the docker config's auths, for the image's registry only") {
  forge::testing::TempDir dir;
  const std::string config = dir.File("config.json");
  CHECK(*RegistryAuth("127.0.0.1:5000/a:1", dir.File("missing.json")) == "");  // anonymous
  // "user:pa:ss" in base64, and a token for another registry.
  std::ofstream(config) << R"({"auths": {"127.0.0.1:5000": {"auth": "dXNlcjpwYTpzcw=="},
                                         "https://ghcr.io": {"identitytoken": "tok"}}})";
  auto header = RegistryAuth("127.0.0.1:5000/a:1", config);
  REQUIRE(header.ok());
  auto json = nlohmann::json::parse(Decode(*header));
  CHECK(json["username"] == "user");
  CHECK(json["password"] == "pa:ss");
  CHECK(json["serveraddress"] == "127.0.0.1:5000");
  auto token = nlohmann::json::parse(Decode(*RegistryAuth("ghcr.io/o/i:1", config)));
  CHECK(token["identitytoken"] == "tok");
  CHECK(*RegistryAuth("quay.io/o/i:1", config) == "");

  std::ofstream(config) << "{not json";
  auto bad = RegistryAuth("127.0.0.1:5000/a:1", config);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().kind() == forge::Kind::kBadConfig);
  CHECK(bad.status().message().find(config) != std::string::npos);
}

TEST_CASE("a registry that did not answer is worth a retry; a missing or denied image is not") {
  // The Docker engine's own words (20.10, a build's FROM and a pull).
  CHECK(RegistryErrorIsTransient(
      R"(Get "http://127.0.0.1:5999/v2/": dial tcp 127.0.0.1:5999: connect: connection refused)"));
  CHECK(RegistryErrorIsTransient(
      R"(Get "https://registry-1.docker.io/v2/": net/http: TLS handshake timeout)"));
  CHECK(RegistryErrorIsTransient(
      "toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating"));
  CHECK(RegistryErrorIsTransient(
      "received unexpected HTTP status: 503 Service Unavailable"));
  CHECK_FALSE(RegistryErrorIsTransient(
      "manifest for 127.0.0.1:5000/nothing:latest not found: manifest unknown: manifest unknown"));
  CHECK_FALSE(RegistryErrorIsTransient(
      "pull access denied for nothing, repository does not exist or may require 'docker login'"));
  // A Dockerfile step that failed is not a registry error at all.
  CHECK_FALSE(RegistryErrorIsTransient(
      "The command '/bin/sh -c exit 3' returned a non-zero code: 3"));
}

namespace {

// A credential helper as the docker CLI runs one (docker-credential-NAME get,
// the server on stdin), on PATH for the test's length.
struct HelperOnPath {
  forge::testing::TempDir dir;
  std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  explicit HelperOnPath(const std::string& script) {
    const std::string file = dir.File("docker-credential-forgetest");
    std::ofstream(file) << script;
    std::filesystem::permissions(file, std::filesystem::perms::owner_all);
    setenv("PATH", (dir.path().string() + ":" + old_path).c_str(), 1);
  }
  ~HelperOnPath() { setenv("PATH", old_path.c_str(), 1); }
};

constexpr char kHelper[] = R"(#!/bin/sh
[ "$1" = get ] || exit 3
read -r server
case "$server" in
  127.0.0.1:5000) echo '{"ServerURL":"127.0.0.1:5000","Username":"robot","Secret":"s3cret"}' ;;
  ghcr.io) echo '{"ServerURL":"ghcr.io","Username":"<token>","Secret":"tok"}' ;;
  broken.example) echo 'keychain locked'; exit 2 ;;
  *) echo 'credentials not found in native keychain'; exit 1 ;;
esac
)";

}  // namespace

TEST_CASE("credential helpers answer as the docker CLI asks them: credHelpers, then credsStore, then auths") {
  HelperOnPath helper(kHelper);
  forge::testing::TempDir dir;
  const std::string config = dir.File("config.json");
  std::ofstream(config) << R"({"credHelpers": {"127.0.0.1:5000": "forgetest", "broken.example": "forgetest",
                                               "nohelper.example": "no-such-helper"},
                               "credsStore": "forgetest",
                               "auths": {"quay.io": {"auth": "dXNlcjpwYTpzcw=="}}})";
  auto robot = nlohmann::json::parse(Decode(*RegistryAuth("127.0.0.1:5000/a:1", config)));
  CHECK(robot["username"] == "robot");
  CHECK(robot["password"] == "s3cret");
  // credsStore: "<token>" as the user means an identity token.
  auto token = nlohmann::json::parse(Decode(*RegistryAuth("ghcr.io/o/i:1", config)));
  CHECK(token["identitytoken"] == "tok");
  CHECK_FALSE(token.contains("username"));
  // The store has nothing for quay.io: the file's own auth is used.
  auto quay = nlohmann::json::parse(Decode(*RegistryAuth("quay.io/o/i:1", config)));
  CHECK(quay["username"] == "user");
  CHECK(*RegistryAuth("example.org/o/i:1", config) == "");  // nothing anywhere: anonymous
  // A helper that fails, or is not there, is an error naming it, not an anonymous pull.
  auto broken = RegistryAuth("broken.example/o/i:1", config);
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.status().kind() == forge::Kind::kBadConfig);
  CHECK(broken.status().message().find("docker-credential-forgetest get broken.example: exit 2: keychain locked") !=
        std::string::npos);
  auto missing = RegistryAuth("nohelper.example/o/i:1", config);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("docker-credential-no-such-helper") != std::string::npos);
}

TEST_CASE("a build is given every registry the config has credentials for") {
  HelperOnPath helper(kHelper);
  forge::testing::TempDir dir;
  const std::string config = dir.File("config.json");
  CHECK(*forge::sandbox::docker::BuildRegistryConfig(dir.File("missing.json")) == "");
  std::ofstream(config) << R"({"credHelpers": {"127.0.0.1:5000": "forgetest"},
                               "auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYTpzcw=="},
                                         "example.org": {}}})";
  auto header = forge::sandbox::docker::BuildRegistryConfig(config);
  REQUIRE(header.ok());
  auto all = nlohmann::json::parse(Decode(*header));
  CHECK(all["127.0.0.1:5000"]["username"] == "robot");
  CHECK(all["https://index.docker.io/v1/"]["username"] == "user");
  CHECK(all["https://index.docker.io/v1/"]["serveraddress"] == "https://index.docker.io/v1/");
  CHECK_FALSE(all.contains("example.org"));  // an entry without credentials
}

TEST_CASE("a pull's progress adds up its layers' bytes from the engine's lines, in any pieces") {
  // Lines as Docker Engine 20.10 streams them for POST /images/create.
  const std::string answer =
      R"({"status":"Pulling from forge-e2e/busybox","id":"1"})" "\n"
      R"({"status":"Pulling fs layer","progressDetail":{},"id":"aaa"})" "\n"
      R"({"status":"Pulling fs layer","progressDetail":{},"id":"bbb"})" "\n"
      R"({"status":"Downloading","progressDetail":{"current":1000,"total":4000},"progress":"[=>  ] 1kB/4kB","id":"aaa"})" "\n"
      R"({"status":"Downloading","progressDetail":{"current":500,"total":2000},"id":"bbb"})" "\n"
      R"({"status":"Verifying Checksum","progressDetail":{},"id":"bbb"})" "\n"
      R"({"status":"Download complete","progressDetail":{},"id":"bbb"})" "\n"
      R"({"status":"Extracting","progressDetail":{"current":9999,"total":99999},"id":"bbb"})" "\n";
  for (size_t piece : {size_t{1}, size_t{7}, answer.size()}) {
    forge::sandbox::docker::PullProgress progress;
    for (size_t at = 0; at < answer.size(); at += piece) progress.Feed(std::string_view(answer).substr(at, piece));
    CHECK(progress.layers() == 2);
    CHECK(progress.total_bytes() == 6000);
    CHECK(progress.done_bytes() == 3000);
    CHECK(progress.error().empty());
    progress.Feed(R"({"status":"Pull complete","progressDetail":{},"id":"aaa"})" "\n");
    CHECK(progress.done_bytes() == 6000);
    progress.Feed(R"({"errorDetail":{"message":"unauthorized: authentication required"},)");
    progress.Feed(R"("error":"unauthorized: authentication required"})" "\n{\"error\":\"second\"}\n");
    CHECK(progress.error() == "unauthorized: authentication required");
  }
}

TEST_CASE("an image pull Secret's .dockerconfigjson: the registries' credentials as kubectl create secret docker-registry writes them") {
  forge::testing::TempDir dir;
  const std::string config = dir.File("config.json");
  using forge::sandbox::docker::PullSecretDockerConfig;
  CHECK(*PullSecretDockerConfig({"127.0.0.1:5000/a:1"}, dir.File("missing.json")) == "");  // anonymous
  std::ofstream(config) << R"({"auths": {"http://127.0.0.1:5000": {"auth": "dXNlcjpwYTpzcw=="},
                                         "127.0.0.1:6000": {"auth": "cm9ib3Q6czNjcmV0"},
                                         "https://index.docker.io/v1/": {"auth": "aHViOmh1YnB3"},
                                         "https://ghcr.io": {"identitytoken": "tok"}}})";
  auto made = PullSecretDockerConfig({"127.0.0.1:5000/team/forge-task"}, config);
  REQUIRE(made.ok());
  CHECK(nlohmann::json::parse(*made) == nlohmann::json::parse(R"({"auths": {"127.0.0.1:5000":
      {"username": "user", "password": "pa:ss", "auth": "dXNlcjpwYTpzcw=="}}})"));
  CHECK(*PullSecretDockerConfig({"quay.io/o/i"}, config) == "");
  // every registry the pods pull from that has credentials, one entry each; the others pull anonymously
  auto several = PullSecretDockerConfig({"127.0.0.1:5000/team/forge-task", "127.0.0.1:6000/private/x:1",
                                         "127.0.0.1:6000/private/y@sha256:" + std::string(64, 'a'), "quay.io/o/i",
                                         "busybox:1"}, config);
  REQUIRE(several.ok());
  CHECK(nlohmann::json::parse(*several) == nlohmann::json::parse(R"({"auths": {
      "127.0.0.1:5000": {"username": "user", "password": "pa:ss", "auth": "dXNlcjpwYTpzcw=="},
      "127.0.0.1:6000": {"username": "robot", "password": "s3cret", "auth": "cm9ib3Q6czNjcmV0"},
      "https://index.docker.io/v1/": {"username": "hub", "password": "hubpw", "auth": "aHViOmh1YnB3"}}})"));
  auto token = PullSecretDockerConfig({"127.0.0.1:5000/a:1", "ghcr.io/o/i"}, config);
  REQUIRE_FALSE(token.ok());
  CHECK(token.status().kind() == forge::Kind::kBadConfig);
  CHECK(token.status().message().find("ghcr.io (image ghcr.io/o/i)") != std::string::npos);
  CHECK(token.status().message().find("--k8s-image-pull-secret") != std::string::npos);
}
