// The proxy's ready-first socket I/O (ready_io_asio.h) and its HTTP reader
// (http_read_asio.h), over real loopback TCP: the proxy's side runs on an
// io_context, the peer is a blocking socket driven from a thread.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "proxy/http_read_asio.h"
#include "proxy/ready_io_asio.h"

// A namespace of its own, so that its using-declarations reach no other file
// of a unity build.
namespace proxy_ready_io_test {

namespace asio = forge::proxy::asio;
namespace beast = forge::proxy::beast;
namespace http = forge::proxy::http;
using forge::proxy::ReadBodyInto;
using forge::proxy::ReadHttp;
using forge::proxy::ReadSomeReady;
using forge::proxy::ReadUntil;
using forge::proxy::Task;
using forge::proxy::tcp;

namespace {

// A connected pair on 127.0.0.1: `ours` for the code under test, `peer` for the test.
struct LoopbackPair {
  asio::io_context io;
  tcp::socket ours{io};
  tcp::socket peer{io};
  LoopbackPair() {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    peer.connect(acceptor.local_endpoint());
    acceptor.accept(ours);
  }
  // Runs a coroutine on io until it finishes.
  void Run(Task<void> task) {
    bool done = false;
    asio::co_spawn(io, std::move(task), [&](std::exception_ptr) { done = true; });
    io.run();
    io.restart();
    CHECK(done);
  }
};

struct SocketReader {
  tcp::socket& socket;
  double timeout = 0;
  Task<size_t> ReadSome(asio::mutable_buffer into, beast::error_code& ec) {
    return ReadSomeReady(socket, into, timeout, ec);
  }
};

void SendAll(tcp::socket& socket, std::string_view bytes) { asio::write(socket, asio::buffer(bytes.data(), bytes.size())); }

// Sweeps the context's timed waits every 10 ms, as the server's SweepWaits does.
Task<void> Sweeper(const bool& stop) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  while (!stop) {
    timer.expires_after(std::chrono::milliseconds(10));
    beast::error_code ec;
    co_await timer.async_wait(forge::proxy::Into(ec));
    forge::proxy::SweepExpiredWaits(executor.context(), std::chrono::steady_clock::now());
  }
}

}  // namespace

TEST_CASE("ReadHttp reads a request that arrives a few bytes at a time") {
  LoopbackPair pair;
  std::string body(1000, 'x');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i % 26);
  std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body;
  std::thread peer([&] {
    for (size_t i = 0; i < request.size(); i += 7) {
      SendAll(pair.peer, std::string_view(request).substr(i, 7));
      if (i % 140 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  http::request_parser<http::string_body> parser;
  beast::error_code header_ec, body_ec;
  bool header_done_after_header_read = false;
  pair.Run([&]() -> Task<void> {
    SocketReader reader{pair.ours};
    beast::flat_buffer buffer;
    co_await ReadHttp(reader, buffer, parser, ReadUntil::kHeader, header_ec);
    header_done_after_header_read = parser.is_header_done();
    co_await ReadHttp(reader, buffer, parser, ReadUntil::kMessage, body_ec);
  }());
  peer.join();
  CHECK_FALSE(header_ec);
  CHECK_FALSE(body_ec);
  CHECK(header_done_after_header_read);
  REQUIRE(parser.is_done());
  CHECK(parser.get().target() == "/v1/chat/completions");
  CHECK(parser.get().body() == body);
}

TEST_CASE("ReadBodyInto takes a large body from the buffer and then the socket, and leaves the next request") {
  LoopbackPair pair;
  std::string body(300000, 'x');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i % 26);
  std::string next = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body + next;
  std::thread peer([&] {
    // The header and the body's start in one send, the rest in pieces, the next request right after.
    for (size_t i = 0; i < request.size(); i += 65536) {
      SendAll(pair.peer, std::string_view(request).substr(i, 65536));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  http::request_parser<http::string_body> parser;
  beast::error_code header_ec, body_ec, next_ec;
  http::request_parser<http::string_body> second;
  pair.Run([&]() -> Task<void> {
    SocketReader reader{pair.ours};
    beast::flat_buffer buffer;
    co_await ReadHttp(reader, buffer, parser, ReadUntil::kHeader, header_ec);
    co_await ReadBodyInto(reader, buffer, static_cast<size_t>(*parser.content_length()), parser.get().body(), body_ec);
    co_await ReadHttp(reader, buffer, second, ReadUntil::kMessage, next_ec);
  }());
  peer.join();
  CHECK_FALSE(header_ec);
  CHECK_FALSE(body_ec);
  CHECK_FALSE(next_ec);
  CHECK(parser.get().body() == body);
  CHECK(second.get().target() == "/health");
}

TEST_CASE("ReadBodyInto names a body the client broke off") {
  LoopbackPair pair;
  SendAll(pair.peer, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + std::string(5000, 'y'));
  pair.peer.shutdown(tcp::socket::shutdown_send);
  http::request_parser<http::string_body> parser;
  beast::error_code header_ec, body_ec;
  pair.Run([&]() -> Task<void> {
    SocketReader reader{pair.ours};
    beast::flat_buffer buffer;
    co_await ReadHttp(reader, buffer, parser, ReadUntil::kHeader, header_ec);
    co_await ReadBodyInto(reader, buffer, 100000, parser.get().body(), body_ec);
  }());
  CHECK_FALSE(header_ec);
  CHECK(body_ec == http::error::partial_message);
}

TEST_CASE("ReadHttp kSome hands over a stream's first event before the next one is sent") {
  LoopbackPair pair;
  std::promise<void> first_seen;
  std::atomic<bool> second_sent{false};
  std::thread peer([&] {
    SendAll(pair.peer,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            "d\r\ndata: first\n\n\r\n");
    // A reader that waited for more than the first event would never signal:
    // the test then fails below instead of hanging.
    first_seen.get_future().wait_for(std::chrono::seconds(5));
    second_sent = true;
    SendAll(pair.peer, "e\r\ndata: second\n\n\r\n0\r\n\r\n");
  });
  std::vector<std::string> reads;
  bool second_sent_before_first_read = true;
  beast::error_code ec;
  pair.Run([&]() -> Task<void> {
    SocketReader reader{pair.ours};
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    co_await ReadHttp(reader, buffer, parser, ReadUntil::kHeader, ec);
    char space[4096];
    while (!ec && !parser.is_done()) {
      parser.get().body().data = space;
      parser.get().body().size = sizeof space;
      co_await ReadHttp(reader, buffer, parser, ReadUntil::kSome, ec);
      if (ec == http::error::need_buffer) ec = {};
      size_t n = sizeof space - parser.get().body().size;
      if (n == 0) continue;
      if (reads.empty()) {
        second_sent_before_first_read = second_sent.load();
        first_seen.set_value();
      }
      reads.emplace_back(space, n);
    }
  }());
  peer.join();
  CHECK_FALSE(ec);
  CHECK_FALSE(second_sent_before_first_read);
  REQUIRE(reads.size() >= 2);
  CHECK(reads.front() == "data: first\n\n");
  std::string all;
  for (const auto& r : reads) all += r;
  CHECK(all == "data: first\n\ndata: second\n\n");
}

namespace {

// Reads one request from pair.ours as the server does; returns how it ended.
beast::error_code ReadRequest(LoopbackPair& pair, ReadUntil until, uint64_t body_limit = 1 << 20) {
  beast::error_code ec;
  pair.Run([&]() -> Task<void> {
    SocketReader reader{pair.ours};
    beast::flat_buffer buffer;
    http::request_parser<http::string_body> parser;
    parser.body_limit(body_limit);
    co_await ReadHttp(reader, buffer, parser, until, ec);
  }());
  return ec;
}

}  // namespace

TEST_CASE("ReadHttp names how a peer that closed early ended the message") {
  SUBCASE("closed before sending anything: end_of_stream") {
    LoopbackPair pair;
    pair.peer.close();
    CHECK(ReadRequest(pair, ReadUntil::kHeader) == http::error::end_of_stream);
  }
  SUBCASE("closed in the middle of the body: partial_message") {
    LoopbackPair pair;
    SendAll(pair.peer, "POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly part");
    pair.peer.close();
    CHECK(ReadRequest(pair, ReadUntil::kMessage) == http::error::partial_message);
  }
  SUBCASE("a body over the parser's limit: body_limit") {
    LoopbackPair pair;
    SendAll(pair.peer, "POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n");
    CHECK(ReadRequest(pair, ReadUntil::kMessage, 10) == http::error::body_limit);
  }
}

TEST_CASE("WriteAllReady writes more than the socket buffers hold, in order") {
  LoopbackPair pair;
  std::string header = "header:";
  std::string data(16 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) >> 7);
  const std::string expected = header + data;
  std::string received;
  std::thread peer([&] {
    std::vector<char> chunk(256 * 1024);
    beast::error_code ec;
    while (received.size() < expected.size()) {
      size_t n = pair.peer.read_some(asio::buffer(chunk), ec);
      if (ec) break;
      received.append(chunk.data(), n);
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // a slow reader: the writer must wait
    }
  });
  beast::error_code ec;
  pair.Run([&]() -> Task<void> {
    std::array<asio::const_buffer, 2> pieces{asio::buffer(header), asio::buffer(data)};
    co_await forge::proxy::WriteAllReady(pair.ours, pieces, 0, ec);
  }());
  peer.join();
  CHECK_FALSE(ec);
  CHECK(pair.ours.non_blocking());
  CHECK(received.size() == expected.size());
  CHECK(received == expected);
}

TEST_CASE("A read with a timeout ends with beast::error::timeout when the peer stays silent") {
  LoopbackPair pair;
  beast::error_code silent_ec, answered_ec;
  size_t answered = 0;
  bool stop = false;
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    SendAll(pair.peer, "hi");
  });
  asio::co_spawn(pair.io, Sweeper(stop), asio::detached);
  pair.Run([&]() -> Task<void> {
    char byte[8];
    // The peer answers within the timeout on the first read, then says nothing more.
    answered = co_await ReadSomeReady(pair.ours, asio::buffer(byte), 5.0, answered_ec);
    co_await ReadSomeReady(pair.ours, asio::buffer(byte), 0.05, silent_ec);
    stop = true;
  }());
  peer.join();
  CHECK_FALSE(answered_ec);
  CHECK(answered == 2);
  CHECK(silent_ec == beast::error::timeout);
}

TEST_CASE("A context shut down with a timed wait pending leaves the next context's waits intact") {
  // The wait's frame is destroyed with its context, on this thread; a later
  // context on the same thread must sweep only its own waits.
  {
    LoopbackPair stopped;
    beast::error_code never;
    asio::co_spawn(stopped.io, [&]() -> Task<void> {
      char byte[1];
      co_await ReadSomeReady(stopped.ours, asio::buffer(byte), 60.0, never);
    }, asio::detached);
    stopped.io.run_for(std::chrono::milliseconds(20));  // the read is now waiting
    CHECK_FALSE(stopped.io.stopped());
  }
  LoopbackPair pair;
  beast::error_code ec;
  bool stop = false;
  asio::co_spawn(pair.io, Sweeper(stop), asio::detached);
  pair.Run([&]() -> Task<void> {
    char byte[1];
    co_await ReadSomeReady(pair.ours, asio::buffer(byte), 0.05, ec);
    stop = true;
  }());
  CHECK(ec == beast::error::timeout);
}

}  // namespace proxy_ready_io_test
