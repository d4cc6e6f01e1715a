#include "launch/network.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "sandbox/one_shot_script.h"

namespace forge::launch {

namespace fs = std::filesystem;

const std::vector<std::string>& NetworkNames() {
  static const std::vector<std::string> names = {"none", "loopback", "host", "proxy-only"};
  return names;
}

std::string NetworkFor(const std::string& network_flag, const std::string& proxy,
                       std::optional<bool> allow_internet, bool pod) {
  std::string network = network_flag.empty() ? (proxy.empty() ? "none" : "host") : network_flag;
  if (allow_internet == false && network == "host") network = proxy.empty() ? "none" : "proxy-only";
  if (pod && network == "host") network = "own";
  return network;
}

bool RelaysProxy(const std::string& network, const std::string& proxy) {
  return network == "proxy-only" || (network == "own" && !proxy.empty());
}

Result<sandbox::NetworkPolicy> ParseNetwork(const std::string& name) {
  if (name == "none") return sandbox::NetworkPolicy::kNone;
  if (name == "loopback") return sandbox::NetworkPolicy::kLoopback;
  if (name == "host") return sandbox::NetworkPolicy::kHost;
  if (name == "proxy-only") return sandbox::NetworkPolicy::kProxyOnly;
  if (name == "own") return sandbox::NetworkPolicy::kOwn;
  return Status::InvalidArgument("--network " + name + ": not one of none, loopback, host, proxy-only");
}

Result<net::Endpoint> ProxyOnlyTarget(const std::string& proxy_url) {
  const std::string what = "--network proxy-only: --proxy " + proxy_url;
  std::string rest;
  uint16_t default_port = 0;
  if (proxy_url.rfind("http://", 0) == 0) {
    rest = proxy_url.substr(7);
    default_port = 80;
  } else if (proxy_url.rfind("https://", 0) == 0) {
    rest = proxy_url.substr(8);
    default_port = 443;
  } else {
    return Status::InvalidArgument(what + ": expected an http:// or https:// URL on 127.0.0.0/8 "
                                "(e.g. http://127.0.0.1:8080)");
  }
  const std::string authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string::npos || authority.empty() || authority[0] == '[') {
    return Status::InvalidArgument(what + ": the host must be an IPv4 loopback address such as 127.0.0.1");
  }
  const size_t colon = authority.rfind(':');
  const std::string host = authority.substr(0, colon);
  const std::string port = colon == std::string::npos ? std::to_string(default_port)
                                                      : authority.substr(colon + 1);
  auto endpoint = net::ParseEndpoint(host + ":" + port);
  if (!endpoint.ok() || host.rfind("127.", 0) != 0 || endpoint->port == 0) {
    return Status::InvalidArgument(
        what + ": the proxy must listen on the host's loopback, named by address (127.0.0.0/8, "
               "e.g. http://127.0.0.1:8080, not a host name): the sandbox's relay listens on that "
               "same address, so the harness's base URL stays as it is. For a proxy elsewhere use "
               "--network host");
  }
  return endpoint;
}

std::string DefaultRelayBinary() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "forge-relay";
  return (self.parent_path() / "forge-relay").string();
}

std::vector<std::string> WithRelay(const std::vector<std::string>& argv, const net::Endpoint& listen,
                                   const std::string& relay_path, const std::string& socket_path) {
  std::vector<std::string> wrapped = {
      "/bin/sh", "-c",
      sandbox::ShellQuote(relay_path) + " --background " + listen.ToString() + " " +
          sandbox::ShellQuote("unix:" + socket_path) + " || exit " + std::to_string(kRelayStartExit) +
          "; exec \"$@\"",
      "forge-harness"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

namespace {

std::string RelayDirParent(const Env& env) { return env.VarOr("TMPDIR", "/tmp"); }

constexpr std::string_view kRelayDirPrefix = "forge-relay-";
constexpr const char* kHeldUntilFile = "held-until";  // unix seconds, as text

// Whether a kept directory's time has not come yet.
bool HeldStill(const fs::path& dir) {
  std::ifstream in(dir / kHeldUntilFile);
  long long until = 0;
  return in >> until && until > static_cast<long long>(std::time(nullptr));
}

// The forge-launch that made a relay directory: its name is
// forge-relay-PID-XXXXXX. 0 for a name of another shape.
pid_t RelayDirOwner(const std::string& name) {
  if (name.rfind(kRelayDirPrefix, 0) != 0) return 0;
  const char* digits = name.c_str() + kRelayDirPrefix.size();
  char* end = nullptr;
  long pid = std::strtol(digits, &end, 10);
  if (end == digits || *end != '-' || pid <= 0) return 0;
  return static_cast<pid_t>(pid);
}

}  // namespace

Result<std::unique_ptr<HostRelay>> HostRelay::Start(const std::optional<net::Endpoint>& proxy, Env& env,
                                                    bool egress) {
  // The PID in the name lets `forge-launch gc` tell a killed run's directory
  // from a running one's.
  std::string pattern =
      RelayDirParent(env) + "/" + std::string(kRelayDirPrefix) + std::to_string(getpid()) + "-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    return Status::CannotCreate("cannot create a directory for the proxy relay's socket in " +
                              fs::path(pattern).parent_path().string());
  }
  std::unique_ptr<HostRelay> host(new HostRelay());
  host->dir_ = pattern;
  std::error_code ec;
  // Traversable by a container's non-root user; only the socket is in it.
  fs::permissions(host->dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec, ec);
  auto listen = [&](const char* name) {
    net::Endpoint at;
    at.kind = net::Endpoint::Kind::kUnix;
    at.path = host->dir_ + "/" + name;
    return net::Listen(at, 0666);
  };
  if (proxy) {
    auto fd = listen(kRelaySocketName);
    if (!fd.ok()) return fd.status().Prefixed("proxy relay");
    host->relay_ = std::make_unique<net::Relay>(*fd, *proxy);
    net::Relay* relay = host->relay_.get();
    host->thread_ = std::thread([relay, &env] {
      Status ran = relay->Run();
      if (!ran.ok()) env.Error("proxy relay stopped: " + ran.message());
    });
  }
  if (egress) {
    auto fd = listen(kEgressSocketName);
    if (!fd.ok()) return fd.status().Prefixed("egress proxy");
    auto started = net::EgressProxy::Start(*fd);
    if (!started.ok()) return started.status();
    host->egress_ = std::move(*started);
  }
  return host;
}

Result<int> RemoveStaleRelayDirs(const Env& env) {
  const std::string parent = RelayDirParent(env);
  std::error_code ec;
  int removed = 0;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    pid_t owner = RelayDirOwner(it->path().filename().string());
    if (owner == 0 || !it->is_directory(ec)) continue;
    // Alive, or not ours to probe (EPERM): left alone.
    if (kill(owner, 0) == 0 || errno != ESRCH) continue;
    if (HeldStill(it->path())) continue;
    std::error_code removing;
    fs::remove_all(it->path(), removing);
    if (removing) return Status::IoError(it->path().string() + ": " + removing.message());
    ++removed;
  }
  if (ec) return Status::IoError(parent + ": " + ec.message());
  return removed;
}

Status HostRelay::KeepFor(int64_t seconds) {
  const std::string marker = dir_ + "/" + kHeldUntilFile;
  std::ofstream out(marker);
  out << static_cast<long long>(std::time(nullptr)) + seconds << "\n";
  if (!out.flush()) return Status::IoError(marker + ": cannot write");
  keep_ = true;
  return Status::Ok();
}

HostRelay::~HostRelay() {
  if (relay_) relay_->Stop();
  if (thread_.joinable()) thread_.join();
  relay_.reset();
  egress_.reset();
  std::error_code ec;
  if (dir_.empty()) return;
  if (keep_) {
    fs::remove(dir_ + "/" + kRelaySocketName, ec);
    fs::remove(dir_ + "/" + kEgressSocketName, ec);
  } else {
    fs::remove_all(dir_, ec);
  }
}

}  // namespace forge::launch
