// How cut_through_asio.h forwards an arriving body: the proxy adds its capture
// fields at the end of the object, so the upstream's Content-Length is the
// client's plus room for them, and what the fields leave of that room is
// filled with spaces (JSON allows space after a value). Everything up to
// the last '}' that has arrived is safe to send: the object's closing brace
// is at or after it. The body is read whole and checked
// (ReadPassThroughRequest) before the rest goes, so a malformed request
// never reaches the upstream complete; its connection is closed with the
// body cut short, which a server discards.
#include "proxy/cut_through_asio.h"

#include <algorithm>

#include "proxy/asio.h"

namespace forge::proxy {
namespace {

// Longer than any run of capture fields the splice appends and the closing
// brace (chat's, streamed, the client asking for nothing: 98 bytes).
constexpr size_t kCaptureRoom = 128;

// What one read brings of an arriving body.
Task<void> ReadMoreOfBody(ArrivingBody& arriving, std::string& body, beast::error_code& ec) {
  size_t n = co_await arriving.read_some(asio::buffer(body.data() + arriving.have, body.size() - arriving.have), ec);
  if (ec == asio::error::eof) ec = http::error::partial_message;
  if (!ec) arriving.have += n;
}

}  // namespace

Task<void> ReadRestOfBody(ArrivingBody& arriving, std::string& body, beast::error_code& ec) {
  ec = {};
  while (!ec && arriving.have < body.size()) co_await ReadMoreOfBody(arriving, body, ec);
}

Task<void> ForwardArrivingBody(const ExchangeServices& services, const ExchangeRequest& request, int max_json_depth,
                               std::string& body, ArrivingBody& arriving, DecodedCall& call, CutThrough& out) {
  const size_t length = body.size();
  out = CutThrough{};
  beast::error_code client_ec;
  if (arriving.have == 0 && length > 0) co_await ReadMoreOfBody(arriving, body, client_ec);
  if (client_ec) {
    out.outcome = CutThrough::Outcome::kClientGone;
    co_return;
  }
  // The splice keeps the client's object from its first byte; a body that
  // starts with space or a byte-order mark goes the usual way.
  Upstream* upstream = length > 0 && body[0] == '{' ? services.pool.Pick(request.rollout, {}) : nullptr;
  std::unique_ptr<UpstreamConn> conn;
  beast::error_code ec;
  if (upstream) {
    conn = co_await services.pool.Connect(*upstream, ec, out.reused);
    if (!ec) {
      conn->stream.set_timeout(services.idle_timeout);
      std::string header = request.head(*upstream).Text(length + kCaptureRoom);
      co_await conn->stream.WriteAll(asio::buffer(header), ec);
    }
    if (ec) conn.reset();  // the usual way will try the upstreams in turn
  }
  size_t sent = 0;
  // The last '}' so far, looked for only in what came since the last look
  // (a long string without one must not be read again for every piece).
  size_t scanned = 0, last_brace = 0;
  for (;;) {
    if (size_t at = std::string_view(body.data() + scanned, arriving.have - scanned).rfind('}');
        at != std::string_view::npos) {
      last_brace = scanned + at;
    }
    scanned = arriving.have;
    if (conn && last_brace > sent) {
      co_await conn->stream.WriteAll(asio::buffer(body.data() + sent, last_brace - sent), ec);
      if (ec) conn.reset();
      sent = last_brace;
    }
    if (arriving.have == length) break;
    co_await ReadMoreOfBody(arriving, body, client_ec);
    if (client_ec) {
      out.outcome = CutThrough::Outcome::kClientGone;
      co_return;  // conn closes with the body cut short
    }
  }
  auto read = ReadPassThroughRequest(body, call.route.completions(), max_json_depth);
  if (!read.ok()) {
    out.outcome = CutThrough::Outcome::kBadRequest;
    out.error = read.status().message();
    co_return;
  }
  call.TakeRaw(std::move(*read));
  const PassThroughRequest* raw = &*call.raw;
  // The bytes sent must be the start of what the splice sends: not so when
  // the object was rebuilt (the client set a capture field itself) after
  // some of it went, or when a '}' came after the object (past a NUL byte).
  const size_t end = raw->kept + raw->added.size();
  if (!conn || raw->kept_from != 0 || sent > raw->kept || end > length + kCaptureRoom) co_return;  // kFallback
  std::string padding(length + kCaptureRoom - end, ' ');
  std::array<asio::const_buffer, 3> rest{asio::buffer(body.data() + sent, raw->kept - sent), asio::buffer(raw->added),
                                        asio::buffer(padding)};
  co_await conn->stream.WriteAll(rest, ec);
  if (ec) co_return;  // kFallback: sent again the usual way
  if (request.sent) request.sent();
  out.outcome = CutThrough::Outcome::kSent;
  out.upstream = upstream;
  out.conn = std::move(conn);
}

}  // namespace forge::proxy
