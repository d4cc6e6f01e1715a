// The client's side of a streamed response: an HTTP/1.1 chunked body whose
// header goes out with the first bytes. Shared by the calls the proxy
// translates or passes through (call.cpp) and the Anthropic pass-through
// (anthropic_upstream.cpp).
#pragma once

#include <memory>
#include <string>

#include "proxy/net.h"

namespace forge::proxy {

// A keepalive coroutine may write comments before the first event; once the
// call writes, it stops (call.cpp).
struct ClientStream {
  tcp::socket* socket = nullptr;
  bool headers_sent = false;
  bool writing = false;
  bool call_started_writing = false;
  bool keepalive_running = false;
  bool failed = false;  // the client went away
  unsigned version = 11;
  std::string content_type = "text/event-stream";
  std::unique_ptr<net::steady_timer> keepalive_timer;
};

// Writes bytes as one chunk (none when empty), with the header the first
// time and the last chunk when last, in one write. Does nothing once the
// client has gone (failed).
Task<void> WriteSseBytes(ClientStream& cs, std::string bytes, bool last);

}  // namespace forge::proxy
