// One model call as it goes through the stages of Server::HandleCall
// (call.cpp, call_relay.cpp): who calls, what is asked, the upstream
// exchange, the answer relayed, and the record committed. Each stage reads
// what the ones before it left here. Private to lib/proxy.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "proxy/chat_assembler.h"
#include "proxy/client_stream.h"
#include "proxy/server.h"
#include "proxy/sse.h"
#include "proxy/token_capture.h"

namespace forge::proxy {

// Why a call is refused before it goes upstream; answered in the client's
// format's error shape (Server::Reject).
struct Refusal {
  int status = 400;
  std::string message;
  Headers headers;
};

struct Call {
  // The URL read, the format made: the decoding a call's refusals need.
  Call(tcp::socket& client, Request& req, const Route& route)
      : client(client),
        req(req),
        route(route),
        t0(MonotonicSeconds()),
        url(ReadClientUrl(route, std::string_view(req.target().data(), req.target().size()))),
        format(MakeClientFormat(url.format)) {}

  tcp::socket& client;
  Request& req;  // its body moves into the record once the upstream request is made
  const Route& route;
  double t0;  // for the latency metric

  // Decode: the client's format, and what it asked.
  ClientUrl url;
  std::unique_ptr<ClientFormat> format;
  bool pass_through = false;              // the upstream's own format, handled as bytes
  bool cut_through = false;               // its body goes upstream as it arrives (cut_through.cpp)
  std::optional<PassThroughRequest> raw;  // a pass-through request, as read
  Json client_request;                    // a translated one, as parsed
  ChatRequest chat;

  // Attribute.
  std::string rollout;

  // Exchange.
  CutThrough forwarded;
  CaptureWants wants;
  bool client_wants_usage = true;
  BodyPieces upstream_body;
  // The request text, in the call log while the upstream works (once its
  // last byte is sent), so the call's own record, logged before its last
  // bytes go out, is short.
  std::optional<LoggedRequest> logged_request;
  UpstreamExchange exchange;
  std::shared_ptr<ClientStream> cs;  // the client's side; shared with the keepalive coroutine

  // Commit.
  store::CallRecord rec;
  std::string retry_key;  // only for SDKs that mark their retries
};

// A streamed answer as it is relayed: each event as it arrives, the final
// chunks held until the call is committed.
struct StreamRelay {
  explicit StreamRelay(std::unique_ptr<StreamTranslator> translator) : translator(std::move(translator)) {}

  std::unique_ptr<StreamTranslator> translator;
  // The translator assembles the client's view; pass-through formats see the
  // same chunks, so only translating formats need a second, chat-form assembly.
  // (Byte-level pass-through assembles its own, from the stripped chunks.)
  ChatAssembler upstream_assembled;
  Json usage;
  CapturedTokens tokens;
  SseParser sse;
  SseEvents events;
  std::string held;
  bool saw_done = false;
  std::string error;
  bool upstream_broke = false;  // its connection broke or went silent mid-answer
  // An event that is not JSON goes to the client as the upstream sent it, in
  // the client's format's framing, and the stream goes on, as it would from
  // a server with that bug (harnesses differ: some skip it, some fail and
  // retry). The record keeps the tokens before it and says so.
  std::string malformed_note;
  CapturedTokens tokens_before_malformed;
};

// Why a read of a streamed answer that failed with ec ends the call: the
// client hung up (cs marked failed: nothing more is written to it), or the
// upstream stalled or broke off (upstream_broke).
std::string MidStreamError(const beast::error_code& ec, const std::string& upstream_url, ClientStream& cs,
                           bool& upstream_broke);

// The call writes to the client from here on: waits out a keepalive write in
// progress and the keepalive coroutine (which uses the client's socket).
Task<void> StopKeepAlive(ClientStream& cs);

}  // namespace forge::proxy
