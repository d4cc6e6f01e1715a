// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// The proxy's HTTP server: one acceptor, one io_context per io thread, and
// one coroutine per connection (no thread per connection). Connections are
// dealt round-robin to the contexts and stay on theirs, so a connection's
// work never hops between threads (as it would with threads sharing one
// context). The server keeps the connections (reading each request, and
// answering those it cannot read), the admission of calls (admission.h),
// its own endpoints and the admin API; each model call is a CallHandler's
// (call_handler_asio.h), made with the services the server owns.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/admission.h"
#include "proxy/asio.h"
#include "proxy/auth.h"
#include "proxy/call_handler_asio.h"
#include "proxy/metrics.h"
#include "proxy/proxy.h"
#include "proxy/recorder.h"
#include "proxy/replay.h"
#include "proxy/retry_keys.h"
#include "proxy/upstream_asio.h"
#include "store/store.h"

namespace forge::proxy {

struct ArrivingBody;

class Server {
 public:
  // contexts[0] also runs the acceptor and the housekeeping coroutines.
  Server(const ProxyConfig& config, UpstreamApiKind upstream_api, std::vector<asio::io_context*> contexts,
         store::Store& writer_store, store::Store& reader_store, UpstreamPool& upstreams, ReplayIndex* replay);

  // Creates the store's call log and the listening socket.
  Status Open();
  void Start();             // spawns the accept loop, the stop watcher and health checks
  void Finish();            // after io threads return: stops the recorder
  Metrics& metrics() { return metrics_; }

 private:
  Task<void> AcceptLoop();
  void StartSession(tcp::socket socket);
  Task<void> WatchStop();
  Task<void> SweepWaits();
  Task<void> Session(tcp::socket socket);
  // Answers one request; false when the connection must close. arriving:
  // its body is still being read (only a call may start before it is all there).
  Task<bool> Handle(tcp::socket& client, Request& req, ArrivingBody* arriving);
  Task<bool> HandleAdmin(tcp::socket& client, Request& req, std::string_view path, std::string_view query);
  Task<bool> HandleModels(tcp::socket& client, Request& req);
  // A whole response (SendResponse), kept alive unless draining.
  Task<bool> Send(tcp::socket& client, Request& req, http::status status, std::string body,
                  std::string_view content_type = "application/json", Headers headers = {});

  const ProxyConfig& config_;
  std::vector<asio::io_context*> contexts_;
  asio::io_context& io_;  // contexts_[0]
  size_t next_context_ = 0;
  store::Store& reader_store_;
  store::Store& writer_store_;
  UpstreamPool& upstreams_;
  ReplayIndex* replay_;
  Metrics metrics_;
  std::unique_ptr<Recorder> recorder_;  // made by Open
  SecretResolver secrets_;
  RetryKeys retry_keys_;
  Admission admission_;
  TokenIdWatch token_ids_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<CallServices> calls_;  // made by Open, with the recorder
  const UpstreamApiKind upstream_api_;
  tcp::acceptor acceptor_;
};

}  // namespace forge::proxy
