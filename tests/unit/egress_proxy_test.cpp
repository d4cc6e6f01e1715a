// net::EgressProxy, a compose pod's egress on an engine without a bridge:
// real sockets, an origin server on 127.0.0.1, the proxy on a unix socket
// in a scratch directory. Absolute-form http requests rewritten to origin
// form with Connection: close, CONNECT tunnels, a refused origin (502),
// garbage (400); the request parser's shapes.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

#include "net/egress_proxy.h"
#include "net/relay.h"
#include "support/temp_dir.h"

// A namespace of its own: names local to this file stay apart in a unity build.
namespace egress_proxy_test {
namespace {

using forge::net::EgressProxy;
using forge::net::ParseEgressRequest;

void Blocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); }

std::string ReadAll(int fd) {
  timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::string ReadHead(int fd) {
  std::string out;
  char c;
  while (out.find("\r\n\r\n") == std::string::npos && recv(fd, &c, 1, 0) == 1) out.push_back(c);
  return out;
}

// An origin on 127.0.0.1 that answers one request and gives back its head.
struct Origin {
  int fd = -1;
  uint16_t port = 0;
  std::future<std::string> head;
  Origin() {
    fd = *forge::net::Listen(*forge::net::ParseEndpoint("127.0.0.1:0"));
    port = *forge::net::BoundPort(fd);
    head = std::async(std::launch::async, [this] {
      pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, 10000) <= 0) return std::string();
      const int c = accept(fd, nullptr, nullptr);
      Blocking(c);
      std::string got = ReadHead(c);
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
      send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      close(c);
      return got;
    });
  }
  ~Origin() { close(fd); }
};

int ConnectUnix(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

}  // namespace

TEST_CASE("the egress proxy: plain http in origin form, a CONNECT tunnel, a refused origin, garbage") {
  forge::testing::TempDir dir;
  const std::string socket = (dir.path() / "egress.sock").string();
  auto listen = forge::net::Listen(*forge::net::ParseEndpoint("unix:" + socket), 0666);
  REQUIRE(listen.ok());
  auto proxy = EgressProxy::Start(*listen);
  REQUIRE(proxy.ok());

  {
    Origin origin;
    const int c = ConnectUnix(socket);
    const std::string request = "GET http://127.0.0.1:" + std::to_string(origin.port) +
                                "/a/b?c=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Connection: keep-alive\r\n"
                                "Connection: keep-alive\r\nUser-Agent: t\r\n\r\n";
    send(c, request.data(), request.size(), MSG_NOSIGNAL);
    CHECK(ReadAll(c).ends_with("\r\n\r\nhello"));
    close(c);
    const std::string head = origin.head.get();
    CHECK(head.rfind("GET /a/b?c=1 HTTP/1.1\r\n", 0) == 0);
    CHECK(head.find("User-Agent: t\r\n") != std::string::npos);
    CHECK(head.find("Connection: close\r\n") != std::string::npos);
    CHECK(head.find("keep-alive") == std::string::npos);
  }
  {
    Origin origin;
    const int c = ConnectUnix(socket);
    const std::string connect_line = "CONNECT 127.0.0.1:" + std::to_string(origin.port) + " HTTP/1.1\r\n\r\n";
    send(c, connect_line.data(), connect_line.size(), MSG_NOSIGNAL);
    CHECK(ReadHead(c) == "HTTP/1.1 200 Connection Established\r\n\r\n");
    const std::string tunnelled = "GET /through HTTP/1.1\r\n\r\n";
    send(c, tunnelled.data(), tunnelled.size(), MSG_NOSIGNAL);
    CHECK(ReadAll(c).ends_with("hello"));
    close(c);
    CHECK(origin.head.get() == tunnelled);
  }
  {
    // Nothing listens on the port a just-closed listener had.
    int fd = *forge::net::Listen(*forge::net::ParseEndpoint("127.0.0.1:0"));
    const uint16_t port = *forge::net::BoundPort(fd);
    close(fd);
    const int c = ConnectUnix(socket);
    const std::string request = "CONNECT 127.0.0.1:" + std::to_string(port) + " HTTP/1.1\r\n\r\n";
    send(c, request.data(), request.size(), MSG_NOSIGNAL);
    CHECK(ReadAll(c).rfind("HTTP/1.1 502 Bad Gateway\r\n", 0) == 0);
    close(c);
  }
  {
    const int c = ConnectUnix(socket);
    const std::string garbage = "HELLO THERE\r\n\r\n";
    send(c, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    CHECK(ReadAll(c).rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    close(c);
  }
  CHECK((*proxy)->accepted() == 4);
}

TEST_CASE("egress requests: CONNECT and absolute-form targets, ports, IPv6, refusals") {
  auto connect = ParseEgressRequest("CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(connect.ok());
  CHECK(connect->host == "api.example.com");
  CHECK(connect->port == "443");
  CHECK(connect->forwarded.empty());
  auto plain = ParseEgressRequest("POST http://deb.example.org/x HTTP/1.0\r\nContent-Length: 3\r\n\r\n");
  REQUIRE(plain.ok());
  CHECK(plain->port == "80");
  CHECK(plain->forwarded == "POST /x HTTP/1.0\r\nContent-Length: 3\r\nConnection: close\r\n\r\n");
  auto bare = ParseEgressRequest("GET http://h:8080 HTTP/1.1\r\n\r\n");
  REQUIRE(bare.ok());
  CHECK(bare->forwarded.rfind("GET / HTTP/1.1\r\n", 0) == 0);
  auto v6 = ParseEgressRequest("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->port == "8443");
  CHECK_FALSE(ParseEgressRequest("CONNECT nohost HTTP/1.1\r\n\r\n").ok());
  CHECK_FALSE(ParseEgressRequest("GET /relative HTTP/1.1\r\n\r\n").ok());
  CHECK_FALSE(ParseEgressRequest("GET https://tls.example/ HTTP/1.1\r\n\r\n").ok());
  CHECK_FALSE(ParseEgressRequest("GARBAGE\r\n\r\n").ok());
}

}  // namespace egress_proxy_test
