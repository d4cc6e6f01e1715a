// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// The client's side of a streamed response: an HTTP/1.1 chunked body whose
// header goes out with the first bytes, written by the upstream APIs' relays
// as events come (upstream_api_asio.h) and by the call's reply once it is
// recorded (client_reply_asio.h); before the first event, keepalive comments.
#pragma once

#include <memory>
#include <string>

#include "proxy/asio.h"

namespace forge::proxy {

// A keepalive timer may write comments before the first event; once the
// call writes, it stops (StopKeepAlive).
struct ClientStream {
  tcp::socket* socket = nullptr;
  bool headers_sent = false;
  bool writing = false;
  bool call_started_writing = false;
  bool failed = false;  // the client went away
  // Bytes passed on but not yet written: they go out first in the next
  // write (DeferSseBytes).
  std::string pending;
  unsigned version = 11;
  std::string content_type = "text/event-stream";
  std::unique_ptr<asio::steady_timer> keepalive_timer;

  // The client's stream has begun: its header is out, or bytes wait to follow it.
  bool started() const { return headers_sent || !pending.empty(); }
};

// Writes what is pending and bytes as one chunk (none when both are empty),
// with the header the first time and the last chunk when last, in one write.
// Does nothing once the client has gone (failed), nor when there is nothing
// to write.
Task<void> WriteSseBytes(ClientStream& cs, std::string bytes, bool last);

// Bytes for the client that go out with the next write, not in one of their
// own: a stream's last read, whose events then share a write with the
// stream's end (sent once the call is recorded), as nginx writes them.
void DeferSseBytes(ClientStream& cs, std::string&& bytes);

// SSE comments on cs every interval seconds until the call writes (it then
// calls StopKeepAlive) or the client goes: a streamed call waiting for its
// first event shows a client that it is alive. The timer's handler shares cs.
void StartKeepAlive(const std::shared_ptr<ClientStream>& cs, const asio::any_io_executor& executor,
                    double interval);

// The call writes to the client from here on: stops the keepalive timer, and
// waits out a keepalive comment being written, if one is (woken when it
// ends, never polled: a call's first byte waits for nothing else).
Task<void> StopKeepAlive(ClientStream& cs);

}  // namespace forge::proxy
