// forge-launch's --network policies, and what "proxy-only" needs on the host.
//
// proxy-only: the sandbox has no network but its own loopback (docker
// NetworkMode "none"; local: a network namespace of its own), and the proxy URL the harness is given, unchanged
// (http://127.0.0.1:PORT), still reaches forge-proxy and nothing else:
//
//   harness ──TCP──▶ forge-relay on the sandbox's 127.0.0.1:PORT
//           ──unix──▶ /forge/run/proxy.sock (a host directory, bind-mounted)
//           ──▶ forge-launch's HostRelay ──TCP──▶ forge-proxy on the host's 127.0.0.1:PORT
//
// forge-relay is a static binary bind-mounted read-only at /forge/bin, so no
// image needs anything installed (the local backend runs it and reaches the
// socket where they are on the host); it is started before the harness, and the
// harness starts only once it listens. Why not a Docker network with the
// proxy on it: that puts the proxy on a bridge address, not on loopback.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "net/egress_proxy.h"
#include "net/relay.h"
#include "sandbox/sandbox.h"

namespace forge::launch {

// The one description of --network's values (--help; the man page says the same).
inline constexpr const char* kNetworkHelp =
    "none (no network), loopback (the sandbox's own only), host (the host's network), or "
    "proxy-only (loopback plus the --proxy URL, which must be on 127.0.0.0/8; docker and local backends). "
    "Default: host with --proxy, else none. A compose pod never shares the host's: it gets a namespace of "
    "its own (the engine's bridge, if any), reaching --proxy through the relay";
const std::vector<std::string>& NetworkNames();
Result<sandbox::NetworkPolicy> ParseNetwork(const std::string& name);

// The network a task's sandbox gets: --network (network_flag), else host
// with a proxy and none without. A task's allow_internet = false always
// wins: "host" becomes proxy-only when there is a proxy (the harness still
// reaches it, nothing else) and none when there is not.
// A compose pod (pod: on a backend that can mount the relay) never shares
// the host's namespace, whose ports two pods of one task would fight over:
// "host" becomes "own" (a namespace of its own with egress; see
// sandbox::NetworkPolicy::kOwn), reaching a proxy through the relay.
std::string NetworkFor(const std::string& network_flag, const std::string& proxy,
                       std::optional<bool> allow_internet, bool pod = false);

// Whether a sandbox on `network` reaches the proxy through the relay.
bool RelaysProxy(const std::string& network, const std::string& proxy);

// Where a sandbox sees the relay binary and the host relay's socket directory.
inline constexpr const char* kRelaySandboxPath = "/forge/bin/forge-relay";
inline constexpr const char* kRelaySocketDir = "/forge/run";
inline constexpr const char* kRelaySocketName = "proxy.sock";
// A compose pod's egress on an engine without a bridge (net/egress_proxy.h):
// forge-relay, a sidecar of the pod, listens on 127.0.0.1:kEgressPort and
// relays to this socket, where forge-launch's HTTP forward proxy serves.
inline constexpr const char* kEgressSocketName = "egress.sock";
inline constexpr int kEgressPort = 3128;
inline constexpr const char* kEgressService = "forge-egress";
// The exit status of the wrapper when forge-relay did not start (with a
// "forge-relay:" line on stderr); the harness did not run.
inline constexpr int kRelayStartExit = sandbox::kNetworkSetupExit;

// The proxy's TCP address under proxy-only: --proxy must be http(s) on an
// IPv4 loopback literal, because the sandbox's relay listens at that same
// address so the harness's base URL stays as it is. InvalidArgument naming the URL
// otherwise.
Result<net::Endpoint> ProxyOnlyTarget(const std::string& proxy_url);

// forge-relay next to the running executable (how an install or a build
// directory lays them out).
std::string DefaultRelayBinary();

// argv run as: start the relay binary at relay_path on `listen` in the
// background, towards the unix socket at socket_path (it returns once
// listening), then exec argv; kRelayStartExit if the relay failed.
std::vector<std::string> WithRelay(const std::vector<std::string>& argv, const net::Endpoint& listen,
                                   const std::string& relay_path, const std::string& socket_path);

// The host half: a private directory holding proxy.sock (mode 0666, the
// directory 0755, so a container's non-root user may connect), relayed to
// the proxy by one thread with one poll loop for the whole run; with
// egress, also egress.sock, served by an HTTP forward proxy.
class HostRelay {
 public:
  // Its directory is made under $TMPDIR; a relay that stops is reported to
  // env (which must outlive it).
  static Result<std::unique_ptr<HostRelay>> Start(const std::optional<net::Endpoint>& proxy, Env& env,
                                                  bool egress = false);
  // Stops the thread and removes the directory, or, after KeepFor, only
  // the socket.
  ~HostRelay();
  // Keeps the directory for `seconds` after this run: held sandboxes mount
  // it, and Docker cannot copy into a container whose bind-mount source is
  // gone (forge-verify uploads a task's tests that way). Records the time
  // in the directory (file "held-until") for RemoveStaleRelayDirs.
  Status KeepFor(int64_t seconds);
  const std::string& dir() const { return dir_; }
  const net::Relay& relay() const { return *relay_; }
  bool egress() const { return egress_ != nullptr; }

 private:
  HostRelay() = default;
  std::string dir_;
  bool keep_ = false;
  std::unique_ptr<net::Relay> relay_;
  std::thread thread_;
  std::unique_ptr<net::EgressProxy> egress_;
};

// Removes the socket directories ($TMPDIR/forge-relay-PID-*) of forge-launch
// processes that are gone (kill -9 skips ~HostRelay), except those kept for
// held sandboxes until their time; returns how many.
Result<int> RemoveStaleRelayDirs(const Env& env);

}  // namespace forge::launch
