// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// What a call writes to its client besides the events its relay passes on
// as they come (the last stage, call_handler_asio.h): a refusal, in the client's
// format's error shape; and, once the call's record is committed, the rest
// of its Outcome (the final bytes, or the error). Upstream addresses never
// reach a client.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "proxy/asio.h"
#include "proxy/client_format.h"
#include "proxy/client_stream_asio.h"
#include "proxy/metrics.h"
#include "proxy/outcome.h"

namespace forge::proxy {

class ClientReply {
 public:
  // stopping: the server is draining (no connection kept alive); urls: --upstream.
  ClientReply(tcp::socket& socket, const Request& req, const ClientUrl& url, const ClientFormat& format,
              const std::atomic<bool>& stopping, const std::vector<std::string>& urls, Metrics& metrics);

  // The streamed response's side, shared with its keepalive timer's handler.
  const std::shared_ptr<ClientStream>& stream() { return stream_; }

  // Refuses the call (counted as the client's error below 500). False: the connection closes.
  Task<bool> Refuse(Refusal refusal);
  // Sends what is left of outcome once its record's commit went as committed
  // says. False: the connection closes.
  Task<bool> Send(Outcome& outcome, const Status& committed);

 private:
  tcp::socket& socket_;
  const Request& req_;
  const ClientFormat& format_;
  const std::atomic<bool>& stopping_;
  const std::vector<std::string>& urls_;
  Metrics& metrics_;
  std::shared_ptr<ClientStream> stream_;
};

}  // namespace forge::proxy
