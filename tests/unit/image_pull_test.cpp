// Image references and registry credentials for forge-launch's pulls.
#include <doctest/doctest.h>
#include <openssl/evp.h>

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
