// The client's side of a streamed answer (client_stream_asio.h): keepalive
// comments before the first event, and the call's first write, over real
// loopback TCP. Issue 59: the first write waited for the keepalive
// coroutine to end, polled every 1 ms, on every streamed call.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "proxy/client_stream_asio.h"

// A namespace of its own, so that its using-declarations reach no other file
// of a unity build.
namespace proxy_client_stream_test {

namespace asio = forge::proxy::asio;
namespace beast = forge::proxy::beast;
using forge::proxy::ClientStream;
using forge::proxy::StartKeepAlive;
using forge::proxy::StopKeepAlive;
using forge::proxy::Task;
using forge::proxy::WriteSseBytes;
using forge::proxy::tcp;

namespace {

struct LoopbackPair {
  asio::io_context io;
  tcp::socket ours{io};
  tcp::socket peer{io};
  LoopbackPair() {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    peer.connect(acceptor.local_endpoint());
    acceptor.accept(ours);
  }
};

// Everything the peer receives until the proxy's side shuts its sending down.
std::string ReadToEnd(tcp::socket& peer) {
  std::string got;
  char buf[65536];
  beast::error_code ec;
  for (;;) {
    size_t n = peer.read_some(asio::buffer(buf), ec);
    got.append(buf, n);
    if (ec) return got;
  }
}

// The call: waits `before` (keepalive comments may go out), then writes one event and the end.
Task<void> Call(std::shared_ptr<ClientStream> cs, std::chrono::milliseconds before, bool& done) {
  if (before.count() > 0) {
    asio::steady_timer wait(co_await asio::this_coro::executor);
    wait.expires_after(before);
    beast::error_code ec;
    co_await wait.async_wait(forge::proxy::Into(ec));
  }
  co_await StopKeepAlive(*cs);
  co_await WriteSseBytes(*cs, "data: x\n\n", true);
  done = true;
}

std::shared_ptr<ClientStream> StreamOn(tcp::socket& socket) {
  auto cs = std::make_shared<ClientStream>();
  cs->socket = &socket;
  return cs;
}

}  // namespace

TEST_CASE("a streamed call's first write stops the keepalive and waits for no timer") {
  LoopbackPair pair;
  auto cs = StreamOn(pair.ours);
  StartKeepAlive(cs, pair.io.get_executor(), 60);
  bool done = false;
  asio::co_spawn(pair.io, Call(cs, std::chrono::milliseconds(0), done), asio::detached);
  // poll() runs what is ready and never waits: a call that waited on a
  // timer (the 1 ms poll it had) would not be done here.
  while (pair.io.poll() > 0) {
  }
  CHECK(done);
  pair.io.run();  // the cancelled keepalive's handler: it writes nothing
  pair.ours.shutdown(tcp::socket::shutdown_send);
  std::string got = ReadToEnd(pair.peer);
  CHECK(got.find(": keepalive") == std::string::npos);
  CHECK(got.find("data: x\n\n") != std::string::npos);
  CHECK(got.size() >= 5);
  CHECK(got.substr(got.size() - 5) == "0\r\n\r\n");
}

TEST_CASE("keepalive comments go out while a call waits, then its events, and no comment after them") {
  LoopbackPair pair;
  auto cs = StreamOn(pair.ours);
  StartKeepAlive(cs, pair.io.get_executor(), 0.005);
  bool done = false;
  asio::co_spawn(pair.io, Call(cs, std::chrono::milliseconds(40), done), asio::detached);
  pair.io.run();
  CHECK(done);
  pair.ours.shutdown(tcp::socket::shutdown_send);
  std::string got = ReadToEnd(pair.peer);
  size_t comment = got.find(": keepalive\n\n");
  size_t event = got.find("data: x\n\n");
  REQUIRE(comment != std::string::npos);
  REQUIRE(event != std::string::npos);
  CHECK(comment < event);
  CHECK(got.find(": keepalive", event) == std::string::npos);
  CHECK(got.substr(got.size() - 5) == "0\r\n\r\n");
}

TEST_CASE("a call that starts writing while a keepalive comment is still going out waits for its end") {
  LoopbackPair pair;
  // Fill the way to the peer, so that the first comment's write waits for room.
  pair.ours.non_blocking(true);
  std::string junk(65536, 'j');
  size_t filled = 0;
  for (;;) {
    beast::error_code ec;
    size_t n = pair.ours.write_some(asio::buffer(junk), ec);
    filled += n;
    if (ec) break;
  }
  auto cs = StreamOn(pair.ours);
  StartKeepAlive(cs, pair.io.get_executor(), 0.005);
  bool done = false;
  asio::co_spawn(pair.io, Call(cs, std::chrono::milliseconds(40), done), asio::detached);
  // The peer reads only after the call has stopped the keepalive mid-comment.
  std::string got;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    got = ReadToEnd(pair.peer);
  });
  pair.io.run();
  CHECK(done);
  pair.ours.shutdown(tcp::socket::shutdown_send);
  reader.join();
  REQUIRE(got.size() > filled);
  std::string after = got.substr(filled);
  size_t comment = after.find(": keepalive\n\n");
  size_t event = after.find("data: x\n\n");
  REQUIRE(comment != std::string::npos);
  REQUIRE(event != std::string::npos);
  CHECK(comment < event);
  CHECK(after.find(": keepalive", event) == std::string::npos);
  CHECK(after.substr(after.size() - 5) == "0\r\n\r\n");
}

}  // namespace proxy_client_stream_test
