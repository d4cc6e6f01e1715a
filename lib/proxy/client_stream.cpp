#include "proxy/client_stream.h"

#include <array>
#include <cstdio>

#include "proxy/http_write.h"
#include "proxy/ready_io.h"

namespace forge::proxy {

Task<void> WriteSseBytes(ClientStream& cs, std::string bytes, bool last) {
  if (cs.failed) co_return;
  cs.writing = true;
  std::string before;
  if (!cs.headers_sent) {
    http::response<http::empty_body> res{http::status::ok, cs.version};
    res.set(http::field::server, "forge-proxy");
    res.set(http::field::content_type, cs.content_type);
    res.set(http::field::cache_control, "no-cache");
    res.chunked(true);
    res.keep_alive(true);
    before = HeaderText(res.base());
    cs.headers_sent = true;
  }
  std::string_view after;
  if (!bytes.empty()) {
    char size_line[24];
    int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", bytes.size());
    before.append(size_line, static_cast<size_t>(n));
    after = last ? "\r\n0\r\n\r\n" : "\r\n";
  } else if (last) {
    after = "0\r\n\r\n";
  }
  std::array<net::const_buffer, 3> pieces{net::buffer(before), net::buffer(bytes),
                                          net::buffer(after.data(), after.size())};
  beast::error_code ec;
  co_await WriteAllReady(*cs.socket, pieces, 0, ec);
  if (ec) cs.failed = true;
  cs.writing = false;
}

}  // namespace forge::proxy
