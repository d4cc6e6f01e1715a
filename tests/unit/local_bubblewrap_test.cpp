// The local backend under bubblewrap: what a command may change and reach.
// Needs bwrap (scripts/bootstrap.sh installs bubblewrap); without it the
// probe's error is checked instead.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "launch/launcher.h"
#include "sandbox/local/local_backend.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace {

namespace local = forge::sandbox::local;
using forge::sandbox::ExecRequest;
using forge::sandbox::NetworkPolicy;
using forge::sandbox::Spec;

bool HaveBubblewrap() { return local::LocalBackend::ProbeBubblewrap().ok(); }

// A listening TCP socket on 127.0.0.1 (an ephemeral port); -1 on failure.
int ListenOnLoopback(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

Spec SpecFor(const std::string& rollout, NetworkPolicy network = NetworkPolicy::kNone) {
  Spec spec;
  spec.run_id = "bw";
  spec.rollout_id = rollout;
  spec.network = network;
  return spec;
}

forge::sandbox::ExecResult Run(forge::sandbox::Sandbox& box, const std::string& script, double timeout = 30) {
  ExecRequest request;
  request.argv = {"/bin/bash", "-c", script};
  request.timeout_seconds = timeout;
  auto ran = box.Exec(request);
  REQUIRE_MESSAGE(ran.ok(), ran.status().message());
  return *ran;
}

}  // namespace

TEST_CASE("bubblewrap: the host is read-only, the sandbox and its private /tmp are writable") {
  if (!HaveBubblewrap()) {
    MESSAGE("bwrap missing or unusable here: " << local::LocalBackend::ProbeBubblewrap().message());
    return;
  }
  forge::testing::TempDir dir;
  local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"), /*bubblewrap=*/true);
  auto box = backend.Create(SpecFor("r1", NetworkPolicy::kHost));
  REQUIRE(box.ok());
  // Outside the sandbox and outside /tmp (which the sandbox has its own of).
  const std::string outside = "/var/tmp/forge-bwrap-outside-" + std::to_string(getpid());
  const std::string host_tmp = "/tmp/forge-bwrap-test-" + std::to_string(getpid());

  auto ran = Run(**box, "echo work > result.txt && echo tmp > /tmp/" + std::filesystem::path(host_tmp).filename().string() +
                            " && if echo x > " + outside + " 2>/dev/null; then echo WROTE-OUTSIDE; fi; echo pid=$$");
  INFO(ran.stderr_data);
  CHECK(ran.exit_code == 0);
  CHECK(ran.stdout_data.find("WROTE-OUTSIDE") == std::string::npos);
  CHECK(!std::filesystem::exists(outside));
  // The workdir and /tmp are the sandbox's own directories on the host.
  const std::string fs_root = (*box)->handle().id + "/fs";
  CHECK(std::filesystem::exists(fs_root + "/work/result.txt"));
  CHECK(std::filesystem::exists(fs_root + host_tmp));
  CHECK(!std::filesystem::exists(host_tmp));
  // Its own pid namespace: the shell is one of the first processes in it.
  const auto at = ran.stdout_data.find("pid=");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoi(ran.stdout_data.substr(at + 4)) < 10);
  CHECK((*box)->Release().ok());
}

TEST_CASE("bubblewrap: --network none reaches nothing on the host's loopback; host does") {
  if (!HaveBubblewrap()) return;
  int port = 0;
  int listener = ListenOnLoopback(&port);
  REQUIRE(listener >= 0);
  forge::testing::TempDir dir;
  local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"), true);
  const std::string connect = "if exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) +
                              "; then echo CONNECTED; else echo REFUSED; fi";
  auto isolated = backend.Create(SpecFor("none", NetworkPolicy::kNone));
  REQUIRE(isolated.ok());
  CHECK(Run(**isolated, connect).stdout_data == "REFUSED\n");
  auto shared = backend.Create(SpecFor("host", NetworkPolicy::kHost));
  REQUIRE(shared.ok());
  CHECK(Run(**shared, connect).stdout_data == "CONNECTED\n");
  close(listener);
}

TEST_CASE("bubblewrap: the deadline kills the sandboxed command and everything it started") {
  if (!HaveBubblewrap()) return;
  forge::testing::TempDir dir;
  local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"), true);
  auto box = backend.Create(SpecFor("slow"));
  REQUIRE(box.ok());
  const std::string marker = "forge-bwrap-sleeper-" + std::to_string(getpid());
  auto started = std::chrono::steady_clock::now();
  auto ran = Run(**box, "(exec -a " + marker + " sleep 60) & exec -a " + marker + " sleep 60", 1);
  CHECK(ran.timed_out);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
  // Nothing of it is left running.
  usleep(200 * 1000);
  // "[f]" keeps the pattern from matching the shell that runs pgrep.
  CHECK(std::system(("pgrep -f '[f]" + marker.substr(1) + "' >/dev/null").c_str()) != 0);
}

TEST_CASE("bubblewrap: asked for on another backend, a usage error") {
  forge::testing::FakeEnv env;
  auto made = forge::launch::MakeBackend(forge::sandbox::BackendKind::kK8s, env, {}, /*bubblewrap=*/true);
  REQUIRE(!made.ok());
  CHECK(made.status().kind() == forge::Kind::kInvalidArgument);
  CHECK(made.status().message().find("--bubblewrap") != std::string::npos);
}
