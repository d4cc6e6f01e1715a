// Writing a complete HTTP/1.1 message: its header as text, then its body,
// in one gather write. Beast's serializer walks a chain of buffer views
// with a state machine on every write; the proxy's messages are small and
// complete when written, so building the header text costs less.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "proxy/net.h"

namespace forge::proxy {

// The start line, the fields and the empty line ending the header.
std::string HeaderText(const http::request_header<>& header);
std::string HeaderText(const http::response_header<>& header);

// Writes header then body; ec tells how it went.
template <typename Stream>
Task<void> WriteMessage(Stream& stream, const std::string& header, std::string_view body, beast::error_code& ec) {
  std::array<net::const_buffer, 2> pieces{net::buffer(header), net::buffer(body.data(), body.size())};
  co_await net::async_write(stream, pieces, Into(ec));
}

}  // namespace forge::proxy
