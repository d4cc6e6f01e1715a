// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// An upstream's answer to a call, as the exchange (upstream_exchange_asio.h)
// leaves it to the relay (upstream_api_asio.h): its status line and headers read,
// its body still to read, and how a read of it that fails ends the call.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "proxy/asio.h"
#include "proxy/outcome.h"
#include "proxy/upstream_asio.h"

namespace forge::proxy {

// An upstream that answered a call with its status line and headers (the
// body still to read through parser); or, without conn, why none did.
struct UpstreamAnswer {
  // The client the answer is for: its hanging up ends the wait for the
  // answer (and, through the connection, every later read of it).
  explicit UpstreamAnswer(const tcp::socket* client) : client(client) {}

  const tcp::socket* client;
  std::unique_ptr<UpstreamConn> conn;
  Upstream* upstream = nullptr;  // the last one tried
  std::optional<http::response_parser<http::buffer_body>> parser;
  std::string error;
  bool timed_out = false;    // the upstream went silent: a 504, and never sent twice
  bool client_gone = false;  // the client hung up first: a 499, and the upstream is not to blame
  // Set once an upstream answered: the answer being read counts against it.
  std::optional<OutstandingCall> outstanding;

  // What a call that got no answer is recorded with.
  int FailureStatus() const { return client_gone ? kClientHungUpStatus : timed_out ? 504 : 502; }
  // Ready for another attempt (the client kept).
  void Reset();
};

// Appends the rest of an answer's body to out: what came in with the header
// (often the whole body), then what the upstream sends, read into out's own
// space (sized by the body's length when the upstream sent one), so no buffer
// is allocated and cleared for each call.
Task<beast::error_code> AppendWholeUpstreamBody(UpstreamAnswer& answer, std::string& out);

// An answer's whole body into out (AppendWholeUpstreamBody), the connection
// given back to pool when it may serve again. False: the call is to fail with
// answer.FailureStatus() and answer.error (the client hung up, or the
// upstream stalled or broke off).
Task<bool> ReadWholeAnswer(UpstreamAnswer& answer, UpstreamPool& pool, std::string& out);

// An answer's retry headers (upstream_faults.h's IsRetryHeader), as sent.
Headers RetryHeaders(const http::fields& upstream);

// "upstream answered <status>: <the error's message>", from an error answer's body.
std::string UpstreamErrorMessage(int status, const std::string& body);

// Why a read of a streamed answer that failed with ec ends the call: the
// client hung up (client_gone, nothing more is written to it), or the
// upstream stalled or broke off (upstream_broke).
std::string MidStreamError(const beast::error_code& ec, const std::string& upstream_url, bool& client_gone,
                           bool& upstream_broke);

}  // namespace forge::proxy
