// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// The policy servers behind the proxy. A rollout sticks to one upstream (a
// hash of its id) so its growing conversation hits that server's prefix
// cache; when that upstream is unhealthy the call goes to the healthy one
// with the fewest outstanding calls. Connections are kept alive and reused.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "proxy/asio.h"
#include "proxy/upstream_stream_asio.h"

namespace forge::proxy {

struct UpstreamConn {
  explicit UpstreamConn(asio::any_io_executor ex) : stream(ex) {}
  UpstreamStream stream;
  beast::flat_buffer buffer;
};

struct Upstream {
  std::string url;        // as given, for records and messages
  std::string host, port;
  bool tls = false;       // https://
  std::string base_path;  // prefix before /v1/..., without a trailing slash
  tcp::resolver::results_type endpoints;
  std::atomic<int> outstanding{0};
  std::atomic<bool> healthy{true};
  std::mutex idle_mutex;
  std::vector<std::unique_ptr<UpstreamConn>> idle;
};

// Counts one call against its upstream's outstanding calls while it lives
// (the least-loaded choice reads the count).
class OutstandingCall {
 public:
  explicit OutstandingCall(Upstream& u) : u_(u) { u_.outstanding.fetch_add(1); }
  ~OutstandingCall() { u_.outstanding.fetch_sub(1); }
  OutstandingCall(const OutstandingCall&) = delete;
  OutstandingCall& operator=(const OutstandingCall&) = delete;

 private:
  Upstream& u_;
};

class UpstreamPool {
 public:
  // Parses and resolves http[s]://host[:port][/base] URLs. https checks the
  // upstream's certificate against the system's CAs and ca_file (PEM), if given.
  static Result<std::unique_ptr<UpstreamPool>> Create(asio::io_context& io, const std::vector<std::string>& urls,
                                                      std::string api_key, const std::string& ca_file = "");

  size_t size() const { return upstreams_.size(); }
  bool empty() const { return upstreams_.empty(); }
  const std::string& api_key() const { return api_key_; }
  Upstream& at(size_t i) { return *upstreams_[i]; }

  // The upstream for a call of this rollout, skipping those already tried.
  Upstream* Pick(std::string_view rollout, const std::vector<Upstream*>& tried);

  // An idle kept-alive connection (reused = true) or a new one.
  Task<std::unique_ptr<UpstreamConn>> Connect(Upstream& upstream, beast::error_code& ec, bool& reused);
  // Gives a connection whose last response ended cleanly back for reuse.
  void Release(Upstream& upstream, std::unique_ptr<UpstreamConn> conn);

  // Polls each upstream's health path until stopped.
  Task<void> HealthLoop(std::string path, double interval_seconds, const std::atomic<bool>& stop);

 private:
  UpstreamPool(asio::io_context& io, std::string api_key) : io_(io), api_key_(std::move(api_key)) {}
  Task<bool> Probe(Upstream& upstream, const std::string& path);
  // TCP connect, then the TLS handshake for an https upstream.
  Task<void> Open(Upstream& upstream, UpstreamConn& conn, beast::error_code& ec);

  asio::io_context& io_;
  std::string api_key_;
  std::shared_ptr<ssl::context> tls_context_;  // made when some upstream is https
  std::vector<std::unique_ptr<Upstream>> upstreams_;
};

}  // namespace forge::proxy
