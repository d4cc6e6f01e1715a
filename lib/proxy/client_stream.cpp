#include "proxy/client_stream_asio.h"

#include <array>
#include <chrono>
#include <cstdio>

#include "proxy/asio.h"
#include "proxy/http_write_asio.h"
#include "proxy/ready_io_asio.h"

namespace forge::proxy {

Task<void> WriteSseBytes(ClientStream& cs, std::string bytes, bool last) {
  if (cs.failed) co_return;
  if (!cs.pending.empty()) {  // (the pending bytes are most of them: the rest goes after, in place)
    cs.pending += bytes;
    bytes = std::move(cs.pending);
    cs.pending.clear();
  }
  if (bytes.empty() && !last && cs.headers_sent) co_return;
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

void DeferSseBytes(ClientStream& cs, std::string&& bytes) {
  if (cs.failed) return;
  if (cs.pending.empty()) {
    cs.pending = std::move(bytes);
  } else {
    cs.pending += bytes;
  }
}

namespace {

void ArmKeepAlive(const std::shared_ptr<ClientStream>& cs, double interval);

// One comment, then the next wait; or, once the call writes, the end: the
// timer's cancel wakes a StopKeepAlive waiting for this write to finish.
// (Started with cs->writing set: a call that starts writing before this
// coroutine runs, co_spawn posts it, waits, and no comment follows its bytes.)
Task<void> WriteKeepAlive(std::shared_ptr<ClientStream> cs, double interval) {
  if (!cs->call_started_writing && !cs->failed) co_await WriteSseBytes(*cs, ": keepalive\n\n", false);
  cs->writing = false;
  if (cs->call_started_writing || cs->failed) {
    cs->keepalive_timer->cancel();
    co_return;
  }
  ArmKeepAlive(cs, interval);
}

// A timer with a plain handler, no coroutine, while nothing is written: a
// call whose first event comes before the interval pays one timer set and
// one cancel.
void ArmKeepAlive(const std::shared_ptr<ClientStream>& cs, double interval) {
  cs->keepalive_timer->expires_after(std::chrono::milliseconds(static_cast<int64_t>(interval * 1000)));
  cs->keepalive_timer->async_wait([cs, interval](const beast::error_code& ec) {
    if (ec || cs->call_started_writing || cs->failed) return;
    cs->writing = true;
    asio::co_spawn(cs->keepalive_timer->get_executor(), WriteKeepAlive(cs, interval), asio::detached);
  });
}

}  // namespace

void StartKeepAlive(const std::shared_ptr<ClientStream>& cs, const asio::any_io_executor& executor,
                    double interval) {
  cs->keepalive_timer = std::make_unique<asio::steady_timer>(executor);
  ArmKeepAlive(cs, interval);
}

Task<void> StopKeepAlive(ClientStream& cs) {
  cs.call_started_writing = true;
  if (!cs.keepalive_timer) co_return;
  if (!cs.writing) {  // the timer's handler, if queued, sees call_started_writing and touches nothing
    cs.keepalive_timer->cancel();
    co_return;
  }
  // A comment is going out: WriteKeepAlive cancels this wait when it ends.
  cs.keepalive_timer->expires_at(asio::steady_timer::time_point::max());
  beast::error_code ec;
  co_await cs.keepalive_timer->async_wait(Into(ec));
}

}  // namespace forge::proxy
