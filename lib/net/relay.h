// A byte relay: accepts stream connections on one endpoint and joins each to
// a new connection to another, copying both ways until both sides are done.
// It is how `forge-launch --network proxy-only` lets a sandbox with no
// network reach forge-proxy: inside the sandbox, forge-relay listens on the
// proxy's 127.0.0.1:PORT and relays to a unix socket bind-mounted from the
// host; on the host, forge-launch relays that socket to the proxy's TCP port.
//
// Only libc (poll, sockets) and the standard library, no name resolution:
// forge-relay links this file statically so it runs in any image.
//
// One thread, one poll loop. Per connection and direction at most
// `buffer_bytes` wait in memory; a side that does not read stops the other
// side's reads (back-pressure), never the other connections. A half-close
// (EOF one way) is passed on as shutdown(SHUT_WR) once that direction's
// buffer is flushed, so request/response protocols that close their sending
// side keep working. A reset or error on either side resets both; a target
// that refuses the connection resets the accepted one, so the client sees a
// failure rather than an empty answer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace forge::net {

// An IPv4 TCP address ("127.0.0.1:8080") or a unix socket ("unix:/run/x.sock").
struct Endpoint {
  enum class Kind { kTcp, kUnix };
  Kind kind = Kind::kTcp;
  std::string host;  // dotted IPv4 literal, for kTcp
  uint16_t port = 0;
  std::string path;  // for kUnix
  std::string ToString() const;
};

// Parses "A.B.C.D:PORT" or "unix:/PATH" (absolute). No host names: nothing
// here resolves, so a static binary needs no NSS.
Result<Endpoint> ParseEndpoint(std::string_view text);

// A listening socket (non-blocking, close-on-exec) on endpoint. A unix
// socket file left by an earlier process is replaced; `mode` (when not 0) is
// applied to it so that other users (a container's) may connect.
Result<int> Listen(const Endpoint& endpoint, unsigned mode = 0);

// The port a TCP listening socket is bound to (for port 0).
Result<uint16_t> BoundPort(int listen_fd);

struct RelayLimits {
  size_t buffer_bytes = 64 << 10;   // per connection and direction
  size_t max_connections = 1024;    // beyond this, accepting pauses
};

class Relay {
 public:
  // Takes ownership of listen_fd (from Listen).
  Relay(int listen_fd, Endpoint target, RelayLimits limits = {});
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Serves until Stop(); then closes every connection. An error only when
  // the loop itself cannot go on (poll failing).
  Status Run();
  // From any thread or a signal handler.
  void Stop();

  // For tests and diagnostics.
  size_t open_connections() const { return open_.load(); }
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t failed_connects() const { return failed_connects_.load(); }

 private:
  struct Connection;
  void Accept();
  void Service(Connection& c, short client_events, short target_events);

  int listen_fd_;
  int wake_[2] = {-1, -1};
  Endpoint target_;
  RelayLimits limits_;
  std::atomic<size_t> open_{0};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> failed_connects_{0};
  std::vector<std::unique_ptr<Connection>> connections_;
  std::chrono::steady_clock::time_point accept_paused_until_{};
};

}  // namespace forge::net
