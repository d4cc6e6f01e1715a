// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// A chat or completions request whose large body goes upstream while the
// client is still sending it, as nginx's proxy_request_buffering off passes
// bytes on, instead of after its last byte: the decode stage of such a call
// (call_handler_asio.h), which reads and checks the body as it forwards it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "proxy/asio.h"
#include "proxy/decode.h"
#include "proxy/upstream_exchange_asio.h"

namespace forge::proxy {

// A request body the proxy starts to forward before it has all of it. The
// request's body has the whole length from the start; the first `have`
// bytes are read.
struct ArrivingBody {
  std::function<Task<size_t>(asio::mutable_buffer, beast::error_code&)> read_some;  // from the client
  size_t have = 0;
};

// Reads the rest of an arriving body into body (the request's);
// partial_message when the client closed first.
Task<void> ReadRestOfBody(ArrivingBody& arriving, std::string& body, beast::error_code& ec);

// How a call that forwards its body as it arrives got on.
struct CutThrough {
  enum class Outcome {
    kSent,         // the whole request went to conn; read its answer
    kFallback,     // the body is read but went nowhere whole: send it as any call is sent
    kBadRequest,   // the body is not a request (error says why); nothing reached the upstream whole
    kClientGone,   // the client broke off its body
  };
  Outcome outcome = Outcome::kFallback;
  Upstream* upstream = nullptr;
  std::unique_ptr<UpstreamConn> conn;
  bool reused = false;  // conn was a kept-alive connection
  std::string error;
};

// Forwards body (the request's, arriving) to request's upstream as it comes,
// the capture fields after its last byte, and reads it into call (DecodedCall::TakeRaw)
// once it is all there and checked, before its end is sent; request.sent
// runs once the upstream has it all. out says how it went.
Task<void> ForwardArrivingBody(const ExchangeServices& services, const ExchangeRequest& request, int max_json_depth,
                               std::string& body, ArrivingBody& arriving, DecodedCall& call, CutThrough& out);

}  // namespace forge::proxy
