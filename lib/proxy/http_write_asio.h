// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// Writing a complete HTTP/1.1 message: its header as text, then its body,
// in one gather write. Beast's serializer walks a chain of buffer views
// with a state machine on every write; the proxy's messages are small and
// complete when written, so building the header text costs less.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "proxy/asio.h"
#include "proxy/outcome.h"
#include "proxy/ready_io_asio.h"
#include "proxy/upstream_stream_asio.h"

namespace forge::proxy {

// A body sent as two pieces back to back (the second may be empty): a large
// client body goes upstream from where it is, with the proxy's additions after it.
struct BodyPieces {
  std::string_view first, second;
  BodyPieces() = default;
  BodyPieces(std::string_view whole) : first(whole) {}  // NOLINT: a whole body is one piece
  BodyPieces(const std::string& whole) : first(whole) {}  // NOLINT
  BodyPieces(std::string_view head, std::string_view tail) : first(head), second(tail) {}
  size_t size() const { return first.size() + second.size(); }
};

// The status line, the fields and the empty line ending the header (a
// stream's first header, whose fields a format may set).
std::string HeaderText(const http::response_header<>& header);

// An upstream request's header written straight as text, without Beast's
// field container (an allocation and a tree insert per field, on every
// call): METHOD target HTTP/1.1 (persistent unless a Connection field says
// otherwise), the fields in the order set, then Content-Length. The bytes
// Beast writes for the same request.
class RequestHead {
 public:
  explicit RequestHead(std::string_view target, std::string_view method = "POST");
  RequestHead& Set(std::string_view name, std::string_view value);
  std::string Text(uint64_t content_length) &&;

 private:
  std::string text_;
};

// The same for a whole response to a client: the status line, the fields
// in the order set, then Connection as Beast writes it for keep_alive and
// the version (HTTP/1.1: "close" or nothing; 1.0: "keep-alive" or nothing),
// then Content-Length.
class ResponseHead {
 public:
  ResponseHead(http::status status, unsigned version);
  ResponseHead& Set(std::string_view name, std::string_view value);
  std::string Text(bool keep_alive, uint64_t content_length) &&;

 private:
  std::string text_;
  unsigned version_;
};

// Writes header then body to a client; ec tells how it went.
inline Task<void> WriteMessage(tcp::socket& client, const std::string& header, std::string_view body,
                               beast::error_code& ec) {
  std::array<asio::const_buffer, 2> pieces{asio::buffer(header), asio::buffer(body.data(), body.size())};
  co_await WriteAllReady(client, pieces, 0, ec);
}

// Sends a whole response to a client: the status, the fields (Server,
// Content-Type, then headers), and body, in one write. True when the
// connection may serve another request: the client's request keeps it
// alive, may_keep_alive (not draining), and the write went through.
Task<bool> SendResponse(tcp::socket& client, const Request& req, bool may_keep_alive, http::status status,
                        std::string body, std::string_view content_type = "application/json",
                        Headers headers = {});

// The same to an upstream, within its timeout.
inline Task<void> WriteMessage(UpstreamStream& upstream, const std::string& header, BodyPieces body,
                               beast::error_code& ec) {
  std::array<asio::const_buffer, 3> pieces{asio::buffer(header), asio::buffer(body.first.data(), body.first.size()),
                                          asio::buffer(body.second.data(), body.second.size())};
  co_await upstream.WriteAll(pieces, ec);
}

}  // namespace forge::proxy
