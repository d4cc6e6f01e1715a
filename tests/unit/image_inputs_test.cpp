// The hash that tags an image forge builds for a cluster
// (sandbox/docker/image_inputs.h): the same inputs give the same hash
// whatever order their files are listed or created in; a file's content, its
// permission bits, the Dockerfile, a symlink's target, an added file and the
// harness layer each change it; mtimes do not. Also the registry's
// WWW-Authenticate challenge as read for a token (sandbox/docker/registry.h)
// and the tag's form (image_publish.h).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sandbox/docker/image_inputs.h"
#include "sandbox/docker/image_publish.h"
#include "sandbox/docker/registry.h"
#include "support/temp_dir.h"

// A namespace of its own: names local to this file stay apart in a unity build.
namespace image_inputs_test {
namespace {

namespace fs = std::filesystem;
using forge::sandbox::docker::HarnessLayer;
using forge::sandbox::docker::ImageInputHash;
using forge::sandbox::docker::ImageInputHashOf;
using forge::sandbox::docker::InputFile;
using forge::sandbox::docker::ListInputs;

void Write(const fs::path& path, const std::string& content, mode_t mode = 0644) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
  chmod(path.c_str(), mode);
}

// A build context: files written in the order given.
void MakeContext(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [name, content] : files) Write(dir / name, content, name == "run.sh" ? 0755 : 0644);
}

std::string HashOf(const fs::path& dir, const HarnessLayer* layer = nullptr) {
  auto hash = ImageInputHashOf(dir.string(), layer);
  REQUIRE(hash.ok());
  CHECK(hash->size() == 64);
  return *hash;
}

const std::vector<std::pair<std::string, std::string>> kFiles = {
    {"Dockerfile", "FROM busybox\nCOPY . /app\n"}, {"run.sh", "#!/bin/sh\necho hi\n"},
    {"data/a.txt", "a"}, {"data/b.txt", "b"}, {"z.txt", "z"}};

TEST_CASE("image input hash: the same files in any order, on any path, at any mtime, give the same hash") {
  forge::testing::TempDir tmp;
  std::vector<std::pair<std::string, std::string>> reversed(kFiles.rbegin(), kFiles.rend());
  MakeContext(tmp.path() / "one", kFiles);
  MakeContext(tmp.path() / "two", reversed);
  const std::string one = HashOf(tmp.path() / "one");
  CHECK(HashOf(tmp.path() / "two") == one);
  fs::last_write_time(tmp.path() / "two/z.txt", fs::file_time_type::clock::now() - std::chrono::hours(48));
  CHECK(HashOf(tmp.path() / "two") == one);

  // The pure function sorts its own copy.
  auto listed = ListInputs((tmp.path() / "one").string());
  REQUIRE(listed.ok());
  CHECK(std::is_sorted(listed->begin(), listed->end(), [](auto& a, auto& b) { return a.path < b.path; }));
  std::vector<InputFile> shuffled = *listed;
  std::reverse(shuffled.begin(), shuffled.end());
  CHECK(ImageInputHash(shuffled, "", {}) == ImageInputHash(*listed, "", {}));
  CHECK(ImageInputHash(*listed, "", {}) == one);
}

TEST_CASE("image input hash: content, mode, the Dockerfile, a new file and a symlink's target change it") {
  forge::testing::TempDir tmp;
  const fs::path dir = tmp.path() / "ctx";
  MakeContext(dir, kFiles);
  const std::string base = HashOf(dir);

  Write(dir / "data/a.txt", "A");
  const std::string content = HashOf(dir);
  CHECK(content != base);
  Write(dir / "data/a.txt", "a");
  CHECK(HashOf(dir) == base);

  chmod((dir / "run.sh").c_str(), 0644);
  CHECK(HashOf(dir) != base);
  chmod((dir / "run.sh").c_str(), 0755);
  CHECK(HashOf(dir) == base);

  Write(dir / "Dockerfile", "FROM busybox\nCOPY . /srv\n");
  CHECK(HashOf(dir) != base);
  Write(dir / "Dockerfile", "FROM busybox\nCOPY . /app\n");
  CHECK(HashOf(dir) == base);

  Write(dir / "data/c.txt", "");  // an empty new file counts
  CHECK(HashOf(dir) != base);
  fs::remove(dir / "data/c.txt");
  fs::create_directory(dir / "empty");  // and so does a directory
  CHECK(HashOf(dir) != base);
  fs::remove(dir / "empty");
  CHECK(HashOf(dir) == base);

  fs::create_symlink("z.txt", dir / "link");
  const std::string link = HashOf(dir);
  auto listed = ListInputs(dir.string() + "/");
  REQUIRE(listed.ok());
  auto entry = std::find_if(listed->begin(), listed->end(), [](const InputFile& f) { return f.type == 'l'; });
  REQUIRE(entry != listed->end());
  CHECK(entry->path == "link");  // its own name, not its target's
  CHECK(entry->content == "z.txt");
  fs::remove(dir / "link");
  fs::create_symlink("run.sh", dir / "link");
  CHECK(HashOf(dir) != link);

  // A file's name and content do not run together: "ab" + "" is not "a" + "b".
  std::vector<InputFile> split = {{"a", 'f', 0644, "b"}}, joined = {{"ab", 'f', 0644, ""}};
  CHECK(ImageInputHash(split, "", {}) != ImageInputHash(joined, "", {}));
}

TEST_CASE("image input hash: the harness layer's files and destination change it") {
  forge::testing::TempDir tmp;
  MakeContext(tmp.path() / "ctx", kFiles);
  Write(tmp.path() / "harnesses/claude-code/VERSION", "1.0.0\n");
  const std::string bare = HashOf(tmp.path() / "ctx");
  HarnessLayer layer{(tmp.path() / "harnesses").string(), "/opt/forge/harnesses"};
  const std::string layered = HashOf(tmp.path() / "ctx", &layer);
  CHECK(layered != bare);
  Write(tmp.path() / "harnesses/claude-code/VERSION", "1.0.1\n");
  const std::string upgraded = HashOf(tmp.path() / "ctx", &layer);
  CHECK(upgraded != layered);
  HarnessLayer elsewhere{layer.source_dir, "/usr/local/harnesses"};
  CHECK(HashOf(tmp.path() / "ctx", &elsewhere) != upgraded);
  // An empty layer is still a layer.
  CHECK(ImageInputHash({}, "/opt/forge/harnesses", {}) != ImageInputHash({}, "", {}));
}

TEST_CASE("image input hash: a context that is not there is NotFound naming it") {
  auto hash = ImageInputHashOf("/nonexistent/forge-ctx", nullptr);
  REQUIRE_FALSE(hash.ok());
  CHECK(hash.status().kind() == forge::Kind::kNotFound);
  CHECK(hash.status().message().find("/nonexistent/forge-ctx") != std::string::npos);
}

TEST_CASE("image publish: the tag is REGISTRY[/PATH]/forge-task:<40 hex digits of the input hash>") {
  const std::string hash(64, 'a');
  CHECK(forge::sandbox::docker::PublishTag("127.0.0.1:5000/team/", hash) ==
        "127.0.0.1:5000/team/forge-task:" + std::string(40, 'a'));
  CHECK(forge::sandbox::docker::PublishRepository("registry.example:443") == "registry.example:443/forge-task");
}

TEST_CASE("registry: a WWW-Authenticate challenge's scheme and parameters") {
  auto bearer = forge::sandbox::docker::ParseChallenge(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull,push")");
  CHECK(bearer[""] == "Bearer");
  CHECK(bearer["realm"] == "https://auth.docker.io/token");
  CHECK(bearer["service"] == "registry.docker.io");
  CHECK(bearer["scope"] == "repository:a/b:pull,push");  // the comma inside quotes stays
  auto basic = forge::sandbox::docker::ParseChallenge(R"(Basic realm="forge-e2e")");
  CHECK(basic[""] == "Basic");
  CHECK(basic["realm"] == "forge-e2e");
}

}  // namespace
}  // namespace image_inputs_test
