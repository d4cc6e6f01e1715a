#include "proxy/client_stream.h"

#include <array>
#include <cstdio>

#include "proxy/asio.h"
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
  std::array<asio::const_buffer, 3> pieces{asio::buffer(before), asio::buffer(bytes),
                                          asio::buffer(after.data(), after.size())};
  beast::error_code ec;
  co_await WriteAllReady(*cs.socket, pieces, 0, ec);
  if (ec) cs.failed = true;
  cs.writing = false;
}

namespace {

Task<void> WaitWhile(const bool& flag) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (flag) {
    timer.expires_after(std::chrono::milliseconds(1));
    beast::error_code ec;
    co_await timer.async_wait(Into(ec));
  }
}

Task<void> KeepAlive(std::shared_ptr<ClientStream> cs, double interval) {
  cs->keepalive_running = true;
  while (!cs->call_started_writing && !cs->failed) {
    cs->keepalive_timer->expires_after(std::chrono::milliseconds(static_cast<int64_t>(interval * 1000)));
    beast::error_code ec;
    co_await cs->keepalive_timer->async_wait(Into(ec));
    if (cs->call_started_writing || cs->failed) break;
    co_await WriteSseBytes(*cs, ": keepalive\n\n", false);
  }
  cs->keepalive_running = false;
}

}  // namespace

void StartKeepAlive(const std::shared_ptr<ClientStream>& cs, const asio::any_io_executor& executor,
                    double interval) {
  cs->keepalive_timer = std::make_unique<asio::steady_timer>(executor);
  asio::co_spawn(executor, KeepAlive(cs, interval), asio::detached);
}

Task<void> StopKeepAlive(ClientStream& cs) {
  cs.call_started_writing = true;
  if (cs.keepalive_timer) cs.keepalive_timer->cancel();
  co_await WaitWhile(cs.writing);
  co_await WaitWhile(cs.keepalive_running);
}

}  // namespace forge::proxy
