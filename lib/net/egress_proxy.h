// A pod's egress where the engine has no bridge: an HTTP forward proxy on a
// unix socket (the host relay's directory), which forge-relay inside the
// pod's own network namespace makes 127.0.0.1:kEgressPort, and which the
// pod's containers are pointed at with HTTP_PROXY / HTTPS_PROXY. It takes
// CONNECT host:port (TLS, or any TCP a client tunnels) and absolute-form
// requests for plain http (`GET http://host/path`, sent on as `GET /path`
// with `Connection: close`), resolves the host on the host, connects, and
// copies bytes both ways. What the pod reaches is what the host reaches,
// as under --network host, but its ports stay its own.
//
// One thread accepts; each connection has a thread of its own (at most
// max_connections at once; beyond, 503), which ends when both directions
// are closed or the proxy stops.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"

namespace forge::net {

class EgressProxy {
 public:
  // Takes ownership of listen_fd (net::Listen's).
  static Result<std::unique_ptr<EgressProxy>> Start(int listen_fd, size_t max_connections = 256);
  // Stops accepting, ends every connection, and waits for their threads.
  ~EgressProxy();
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  uint64_t accepted() const;

  struct State;

 private:
  EgressProxy() = default;
  std::shared_ptr<State> state_;
  std::thread acceptor_;
};

// The request head a client sent for target host:port: CONNECT's, or an
// absolute-form request rewritten to origin form with `Connection: close`
// (forwarded: what to send the origin first; empty for CONNECT).
// InvalidData for anything else.
struct EgressRequest {
  std::string host;
  std::string port;
  std::string forwarded;
};
Result<EgressRequest> ParseEgressRequest(const std::string& head);

}  // namespace forge::net
