// forge-launch's --network policies: the proxy URLs proxy-only accepts, the
// wrapper that starts the relay before the harness (under the real /bin/sh),
// the host relay's socket directory, and the local backend's own network
// namespace.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "launch/launcher.h"
#include "launch/network.h"
#include "records/jsonl.h"
#include "store/store.h"
#include "sandbox/local/local_backend.h"
#include "sandbox/one_shot_script.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

using forge::Kind;
namespace launch = forge::launch;

TEST_CASE("network: every --network name parses, proxy-only to its own policy") {
  for (const auto& name : launch::NetworkNames()) CHECK(launch::ParseNetwork(name).ok());
  CHECK(*launch::ParseNetwork("proxy-only") == forge::sandbox::NetworkPolicy::kProxyOnly);
  CHECK(launch::ParseNetwork("bridge").status().kind() == Kind::kInvalidArgument);
  CHECK(std::string(launch::kNetworkHelp).find("proxy-only") != std::string::npos);
}

TEST_CASE("network: proxy-only takes http(s) on an IPv4 loopback literal only") {
  auto plain = launch::ProxyOnlyTarget("http://127.0.0.1:8080");
  REQUIRE(plain.ok());
  CHECK(plain->ToString() == "127.0.0.1:8080");
  CHECK(launch::ProxyOnlyTarget("http://127.0.0.1")->port == 80);
  CHECK(launch::ProxyOnlyTarget("https://127.0.0.2/v1")->ToString() == "127.0.0.2:443");
  CHECK(launch::ProxyOnlyTarget("http://127.10.0.1:9/api?x=1")->ToString() == "127.10.0.1:9");
  for (const char* bad : {"http://10.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080",
                          "unix:/run/proxy.sock", "127.0.0.1:8080", "ftp://127.0.0.1:21",
                          "http://user@127.0.0.1:8080", "http://127.0.0.1:0", "http://127.0.0.1:99999",
                          "http://128.0.0.1:80", "http://"}) {
    auto target = launch::ProxyOnlyTarget(bad);
    CHECK_MESSAGE(!target.ok(), bad);
    if (!target.ok()) {
      CHECK(target.status().kind() == Kind::kInvalidArgument);
      CHECK(target.status().message().find(bad) != std::string::npos);  // names the URL
    }
  }
}

namespace {

// Runs argv through /bin/sh's exec (as the sandbox would); returns the exit status.
int Run(const std::vector<std::string>& argv, const std::string& out) {
  std::string command;
  for (const auto& arg : argv) command += forge::sandbox::ShellQuote(arg) + " ";
  int status = std::system((command + "> " + out + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("network: the wrapper starts the relay first, and a relay that fails stops the harness") {
  forge::testing::TempDir dir;
  const std::string relay = dir.File("relay dir's relay");  // quoting
  const std::string log = dir.File("log");
  auto listen = *forge::net::ParseEndpoint("127.0.0.1:8080");
  SUBCASE("the relay starts: the harness runs after it, with its own argv") {
    std::ofstream(relay) << "#!/bin/sh\necho \"relay $*\" >> '" << log << "'\n";
    chmod(relay.c_str(), 0755);
    auto argv = launch::WithRelay({"/bin/sh", "-c", "echo \"harness $0 $1\" >> '" + log + "'", "a b", "c'd"},
                                  listen, relay, "/forge/run/proxy.sock");
    CHECK(Run(argv, dir.File("out")) == 0);
    CHECK(forge::testing::ReadFile(log) == "relay --background 127.0.0.1:8080 unix:/forge/run/proxy.sock\nharness a b c'd\n");
  }
  SUBCASE("the relay fails: its status is kRelayStartExit and the harness never runs") {
    std::ofstream(relay) << "#!/bin/sh\necho 'forge-relay: no' >&2\nexit 69\n";
    chmod(relay.c_str(), 0755);
    auto argv = launch::WithRelay({"/bin/sh", "-c", "echo ran >> '" + log + "'"}, listen, relay, "/x.sock");
    CHECK(Run(argv, dir.File("out")) == launch::kRelayStartExit);
    CHECK(forge::testing::ReadFile(dir.File("out")).find("forge-relay: no") != std::string::npos);
    CHECK(!std::filesystem::exists(log));
  }
}

TEST_CASE("network: the host relay's socket directory is reachable by others and goes away") {
  forge::testing::TempDir dir;
  forge::testing::FakeEnv env({{"TMPDIR", dir.path().string()}});
  std::string socket_dir;
  {
    auto host = launch::HostRelay::Start(*forge::net::ParseEndpoint("127.0.0.1:9"), env);
    REQUIRE(host.ok());
    socket_dir = (*host)->dir();
    struct stat st;
    REQUIRE(stat(socket_dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0755);
    REQUIRE(stat((socket_dir + "/" + launch::kRelaySocketName).c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0666);
  }
  CHECK(!std::filesystem::exists(socket_dir));
}

TEST_CASE("network: gc removes the relay socket directories of killed runs only") {
  forge::testing::TempDir dir;
  forge::testing::FakeEnv env({{"TMPDIR", dir.path().string()}});
  // A PID that is surely gone: a child that has exited and been reaped.
  pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(child > 0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  const auto killed = dir.path() / ("forge-relay-" + std::to_string(child) + "-aB3dE9");
  const auto mine = dir.path() / ("forge-relay-" + std::to_string(getpid()) + "-zz0000");
  const auto other = dir.path() / "forge-relay-notapid";
  for (const auto& d : {killed, mine, other}) std::filesystem::create_directories(d);
  std::ofstream(killed / launch::kRelaySocketName) << "";
  auto host = launch::HostRelay::Start(*forge::net::ParseEndpoint("127.0.0.1:9"), env);
  REQUIRE(host.ok());
  CHECK((*host)->dir().find("/forge-relay-" + std::to_string(getpid()) + "-") != std::string::npos);

  auto removed = launch::RemoveStaleRelayDirs(env);
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  CHECK(!std::filesystem::exists(killed));
  CHECK(std::filesystem::exists(mine));
  CHECK(std::filesystem::exists(other));
  CHECK(std::filesystem::exists((*host)->dir()));  // a running relay's directory stays
}

TEST_CASE("network: a relay directory kept for held sandboxes outlives its run until its time") {
  forge::testing::TempDir dir;
  forge::testing::FakeEnv env({{"TMPDIR", dir.path().string()}});
  std::string kept;
  {
    auto host = launch::HostRelay::Start(*forge::net::ParseEndpoint("127.0.0.1:9"), env);
    REQUIRE(host.ok());
    kept = (*host)->dir();
    REQUIRE((*host)->KeepFor(3600).ok());
  }
  // The run is over: the socket is gone, the directory a held container mounts is not.
  CHECK(std::filesystem::is_directory(kept));
  CHECK(!std::filesystem::exists(kept + "/" + launch::kRelaySocketName));

  // Its owner is gone (as after forge-launch exits): gc leaves it while its
  // time runs, and removes it once the time has passed.
  pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(child > 0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  const auto orphan = dir.path() / ("forge-relay-" + std::to_string(child) + "-kEpT01");
  std::filesystem::rename(kept, orphan);
  auto first = launch::RemoveStaleRelayDirs(env);
  REQUIRE(first.ok());
  CHECK(*first == 0);
  CHECK(std::filesystem::exists(orphan));
  std::ofstream(orphan / "held-until") << std::time(nullptr) - 1 << "\n";
  auto second = launch::RemoveStaleRelayDirs(env);
  REQUIRE(second.ok());
  CHECK(*second == 1);
  CHECK(!std::filesystem::exists(orphan));
}

TEST_CASE("network: the local backend's proxy-only sandbox has only lo, and lo is up") {
  forge::testing::TempDir dir;
  forge::sandbox::local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"));
  forge::sandbox::Spec spec;
  spec.run_id = "net";
  spec.rollout_id = "r1";
  spec.network = forge::sandbox::NetworkPolicy::kProxyOnly;
  auto box = backend.Create(spec);
  REQUIRE(box.ok());
  forge::sandbox::ExecRequest request;
  // Interfaces, and a listener on lo that a client in the same sandbox reaches.
  // (/proc/net follows the process's namespace; /sys/class/net would not.)
  request.argv = {"/bin/sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; ip -o link show lo"};
  request.timeout_seconds = 30;
  auto ran = (*box)->Exec(request);
  REQUIRE(ran.ok());
  INFO(ran->stderr_data);
  CHECK(ran->exit_code == 0);
  // lo alone, and up.
  const std::string out = ran->stdout_data;
  CHECK(out.rfind("lo\n1: lo: <LOOPBACK,UP", 0) == 0);
  // The host's interfaces for any other policy.
  spec.rollout_id = "r2";
  spec.network = forge::sandbox::NetworkPolicy::kNone;
  auto host_box = backend.Create(spec);
  REQUIRE(host_box.ok());
  request.argv = {"/bin/sh", "-c", "tail -n +3 /proc/net/dev | wc -l"};
  auto host_ran = (*host_box)->Exec(request);
  REQUIRE(host_ran.ok());
  CHECK(std::stoi(host_ran->stdout_data) > 1);
  CHECK((*box)->Release().ok());
  CHECK((*host_box)->Release().ok());
}

namespace {

// A backend that only has a kind: Launch must refuse before using it.
class NamedBackend : public forge::sandbox::Backend {
 public:
  explicit NamedBackend(forge::sandbox::BackendKind kind) : kind_(kind) {}
  forge::sandbox::BackendKind kind() const override { return kind_; }
  forge::Result<std::unique_ptr<forge::sandbox::Sandbox>> Create(const forge::sandbox::Spec&) override {
    ++created;
    return forge::Status::Internal("not here");
  }
  forge::Result<std::unique_ptr<forge::sandbox::Sandbox>> Attach(const forge::sandbox::Handle&) override {
    return forge::Status::Internal("not here");
  }
  forge::Result<int> Collect(const std::string&, int64_t) override { return 0; }
  int created = 0;

 private:
  forge::sandbox::BackendKind kind_;
};

}  // namespace

TEST_CASE("network: proxy-only is refused before any sandbox where it cannot work") {
  forge::testing::TempDir dir;
  auto store = forge::store::Store::Open(dir.File("forge.db"));
  REQUIRE(store.ok());
  auto out = forge::records::JsonlWriter::Create(dir.File("out.jsonl"));
  REQUIRE(out.ok());
  std::ofstream(dir.File("tasks.jsonl")) << "{\"id\":\"t\",\"instruction\":\"x\"}\n";
  forge::testing::FakeEnv env;
  launch::LaunchOptions options;
  options.env = &env;
  options.inputs = {dir.File("tasks.jsonl")};
  options.run_id = "net-refused";
  options.network = "proxy-only";
  options.proxy = "http://127.0.0.1:8080";
  options.relay_binary = "/bin/true";  // executable; never run here
  NamedBackend k8s(forge::sandbox::BackendKind::kK8s);
  forge::Status refused = launch::Launch(options, k8s, **store, **out);
  CHECK(refused.kind() == Kind::kInvalidArgument);
  CHECK(refused.message().find("pods reach forge-proxy through a Service") != std::string::npos);
  options.proxy.clear();
  NamedBackend docker(forge::sandbox::BackendKind::kDocker);
  refused = launch::Launch(options, docker, **store, **out);
  CHECK(refused.kind() == Kind::kInvalidArgument);
  CHECK(refused.message().find("needs --proxy") != std::string::npos);
  options.proxy = "http://127.0.0.1:8080";
  options.relay_binary = dir.File("no-relay");
  refused = launch::Launch(options, docker, **store, **out);
  CHECK(refused.kind() == Kind::kBadConfig);
  CHECK(refused.message().find(dir.File("no-relay")) != std::string::npos);
  CHECK(k8s.created + docker.created == 0);
}
