// Writing a complete HTTP/1.1 message: its header as text, then its body,
// in one gather write. Beast's serializer walks a chain of buffer views
// with a state machine on every write; the proxy's messages are small and
// complete when written, so building the header text costs less.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "proxy/net.h"
#include "proxy/ready_io.h"
#include "proxy/upstream_stream.h"

namespace forge::proxy {

// The start line, the fields and the empty line ending the header.
std::string HeaderText(const http::request_header<>& header);
std::string HeaderText(const http::response_header<>& header);

// Writes header then body to a client; ec tells how it went.
inline Task<void> WriteMessage(tcp::socket& client, const std::string& header, std::string_view body,
                               beast::error_code& ec) {
  std::array<net::const_buffer, 2> pieces{net::buffer(header), net::buffer(body.data(), body.size())};
  co_await WriteAllReady(client, pieces, 0, ec);
}

// The same to an upstream, within its timeout.
inline Task<void> WriteMessage(UpstreamStream& upstream, const std::string& header, std::string_view body, beast::error_code& ec) {
  std::array<net::const_buffer, 2> pieces{net::buffer(header), net::buffer(body.data(), body.size())};
  co_await upstream.WriteAll(pieces, ec);
}

}  // namespace forge::proxy
