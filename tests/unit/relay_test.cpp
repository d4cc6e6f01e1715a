// net::Relay, the byte relay behind `forge-launch --network proxy-only`
// (and forge-relay): real sockets on 127.0.0.1 and unix sockets in a
// scratch directory. Bytes both ways with back-pressure, half-close in each
// direction, resets, a target that is down, many connections at once.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/relay.h"
#include "support/temp_dir.h"

using forge::net::Endpoint;
using forge::net::ParseEndpoint;
using forge::net::Relay;
using forge::net::RelayLimits;

namespace {

void Blocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); }

void RecvTimeout(int fd, int seconds) {
  timeval tv = {seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Reads until EOF; *error is the errno that ended it instead (0 on EOF).
std::string ReadAll(int fd, int* error = nullptr) {
  std::string out;
  char buffer[65536];
  for (;;) {
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (error) *error = n < 0 ? errno : 0;
      return out;
    }
    out.append(buffer, static_cast<size_t>(n));
  }
}

std::string Pattern(size_t size, unsigned seed) {
  std::string s(size, '\0');
  unsigned x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 16);
  }
  return s;
}

std::string Shifted(std::string s) {
  for (auto& c : s) c = static_cast<char>(c + 1);
  return s;
}

// A server at `at`: every accepted connection runs handler on its own thread.
class Target {
 public:
  Target(Endpoint at, std::function<void(int)> handler) : endpoint(std::move(at)), handler_(std::move(handler)) {
    auto fd = forge::net::Listen(endpoint);
    REQUIRE(fd.ok());
    fd_ = *fd;
    Blocking(fd_);
    if (endpoint.kind == Endpoint::Kind::kTcp) endpoint.port = *forge::net::BoundPort(fd_);
    acceptor_ = std::thread([this] {
      for (;;) {
        int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          return;  // shut down
        }
        ++accepted;
        RecvTimeout(c, 20);
        std::lock_guard<std::mutex> lock(mutex_);
        workers_.emplace_back([this, c] {
          handler_(c);
          close(c);
        });
      }
    });
  }
  ~Target() {
    shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    close(fd_);
    for (auto& w : workers_) w.join();
  }
  Endpoint endpoint;
  std::atomic<int> accepted{0};

 private:
  std::function<void(int)> handler_;
  int fd_ = -1;
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> workers_;
};

// A Relay on 127.0.0.1:<ephemeral> running on its own thread.
class RunningRelay {
 public:
  explicit RunningRelay(Endpoint target, RelayLimits limits = {}) {
    auto fd = forge::net::Listen(*ParseEndpoint("127.0.0.1:0"));
    REQUIRE(fd.ok());
    port = *forge::net::BoundPort(*fd);
    relay = std::make_unique<Relay>(*fd, std::move(target), limits);
    thread_ = std::thread([this] { result = relay->Run(); });
  }
  ~RunningRelay() {
    relay->Stop();
    thread_.join();
  }
  int Connect() const {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    RecvTimeout(fd, 20);
    return fd;
  }
  // Waits (bounded) until the relay has no open connection.
  bool Drained() const {
    for (int i = 0; i < 200; ++i) {
      if (relay->open_connections() == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  uint16_t port = 0;
  std::unique_ptr<Relay> relay;
  forge::Status result;

 private:
  std::thread thread_;
};

Endpoint UnixAt(const forge::testing::TempDir& dir, const std::string& name) {
  return *ParseEndpoint("unix:" + dir.File(name));
}

// Echoes every byte plus one as it arrives; passes EOF on with shutdown.
void ShiftingEcho(int fd) {
  char buffer[65536];
  for (;;) {
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) buffer[i] = static_cast<char>(buffer[i] + 1);
    if (!SendAll(fd, std::string(buffer, static_cast<size_t>(n)))) return;
  }
  shutdown(fd, SHUT_WR);
}

}  // namespace

TEST_CASE("relay: endpoints parse and refuse what they cannot be") {
  auto tcp = ParseEndpoint("127.0.0.1:8080");
  REQUIRE(tcp.ok());
  CHECK(tcp->kind == Endpoint::Kind::kTcp);
  CHECK(tcp->host == "127.0.0.1");
  CHECK(tcp->port == 8080);
  CHECK(tcp->ToString() == "127.0.0.1:8080");
  auto un = ParseEndpoint("unix:/forge/run/proxy.sock");
  REQUIRE(un.ok());
  CHECK(un->kind == Endpoint::Kind::kUnix);
  CHECK(un->path == "/forge/run/proxy.sock");
  CHECK(un->ToString() == "unix:/forge/run/proxy.sock");
  for (const char* bad : {"localhost:80", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:8x",
                          "unix:relative.sock", "unix:", "[::1]:80", ""}) {
    auto parsed = ParseEndpoint(bad);
    CHECK_MESSAGE(!parsed.ok(), bad);
    if (!parsed.ok()) CHECK(parsed.status().message().find("endpoint '") != std::string::npos);
  }
  CHECK(!ParseEndpoint("unix:/" + std::string(200, 'x')).ok());  // longer than sun_path
}

TEST_CASE("relay: megabytes both ways at once through 64 KiB buffers, to a unix target") {
  forge::testing::TempDir dir;
  Target target(UnixAt(dir, "t.sock"), ShiftingEcho);
  RunningRelay relay(target.endpoint, RelayLimits{64 << 10, 16});
  const std::string sent = Pattern(6 << 20, 1);
  int fd = relay.Connect();
  // The writer is its own thread: the echo comes back while we still send,
  // so every buffer on the way fills and back-pressure has to hold.
  std::thread writer([&] {
    CHECK(SendAll(fd, sent));
    shutdown(fd, SHUT_WR);
  });
  int error = -1;
  std::string got = ReadAll(fd, &error);
  writer.join();
  close(fd);
  CHECK(error == 0);
  REQUIRE(got.size() == sent.size());
  CHECK(got == Shifted(sent));
  CHECK(relay.Drained());
  CHECK(relay.relay->accepted() == 1);
}

TEST_CASE("relay: half-close passes on in each direction and the other way stays open") {
  forge::testing::TempDir dir;
  SUBCASE("the client finishes first; the answer comes after the target saw EOF") {
    Target target(UnixAt(dir, "t.sock"), [](int fd) {
      std::string request = ReadAll(fd);  // ends only when the client's EOF arrives
      SendAll(fd, "got " + request + " then EOF");
    });
    RunningRelay relay(target.endpoint);
    int fd = relay.Connect();
    REQUIRE(SendAll(fd, "ping"));
    shutdown(fd, SHUT_WR);
    int error = -1;
    CHECK(ReadAll(fd, &error) == "got ping then EOF");
    CHECK(error == 0);
    close(fd);
    CHECK(relay.Drained());
  }
  SUBCASE("the target finishes first; the client can still send") {
    std::promise<std::string> late;
    auto late_words = late.get_future();
    Target target(UnixAt(dir, "t.sock"), [&late](int fd) {
      SendAll(fd, "hello");
      shutdown(fd, SHUT_WR);
      late.set_value(ReadAll(fd));
    });
    RunningRelay relay(target.endpoint);
    int fd = relay.Connect();
    int error = -1;
    CHECK(ReadAll(fd, &error) == "hello");  // EOF reached the client
    CHECK(error == 0);
    REQUIRE(SendAll(fd, "late words"));
    shutdown(fd, SHUT_WR);
    close(fd);
    REQUIRE(late_words.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    CHECK(late_words.get() == "late words");
    CHECK(relay.Drained());
  }
}

TEST_CASE("relay: a reset on one side resets the other, and the relay serves on") {
  SUBCASE("the target resets") {
    Target target(*ParseEndpoint("127.0.0.1:0"), [](int fd) {
      char buffer[16];
      recv(fd, buffer, sizeof buffer, 0);
      linger hard = {1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    });  // closed by Target with the hard linger: an RST
    RunningRelay relay(target.endpoint);
    int fd = relay.Connect();
    REQUIRE(SendAll(fd, "x"));
    int error = 0;
    ReadAll(fd, &error);
    close(fd);
    CHECK(error == ECONNRESET);
    CHECK(relay.Drained());
    // The next connection is relayed as usual.
    int again = relay.Connect();
    REQUIRE(SendAll(again, "y"));
    ReadAll(again);
    close(again);
    CHECK(relay.relay->accepted() == 2);
    CHECK(target.accepted == 2);
  }
  SUBCASE("the client resets") {
    std::atomic<int> target_error{-1};
    Target target(*ParseEndpoint("127.0.0.1:0"), [&](int fd) {
      SendAll(fd, "hello");
      int error = 0;
      ReadAll(fd, &error);
      target_error = error;
    });
    RunningRelay relay(target.endpoint);
    int fd = relay.Connect();
    char buffer[5];
    REQUIRE(recv(fd, buffer, 5, MSG_WAITALL) == 5);
    linger hard = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    close(fd);
    CHECK(relay.Drained());
    for (int i = 0; i < 200 && target_error == -1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(target_error == ECONNRESET);
  }
}

TEST_CASE("relay: a target that is down resets the client at once") {
  forge::testing::TempDir dir;
  RunningRelay relay(UnixAt(dir, "nobody-listens.sock"));
  int fd = relay.Connect();
  int error = 0;
  CHECK(ReadAll(fd, &error).empty());
  close(fd);
  CHECK(error == ECONNRESET);  // a failure, not an empty answer
  CHECK(relay.relay->failed_connects() == 1);
  CHECK(relay.Drained());
}

TEST_CASE("relay: 200 connections at once each get their own bytes back") {
  forge::testing::TempDir dir;
  Target target(UnixAt(dir, "t.sock"), ShiftingEcho);
  RunningRelay relay(target.endpoint);
  constexpr int kClients = 200;
  std::vector<int> fds;
  for (int i = 0; i < kClients; ++i) fds.push_back(relay.Connect());
  std::vector<std::string> got(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      CHECK(SendAll(fds[i], Pattern(20000 + i, i)));
      shutdown(fds[i], SHUT_WR);
      got[i] = ReadAll(fds[i]);
      close(fds[i]);
    });
  }
  for (auto& c : clients) c.join();
  int wrong = 0;
  for (int i = 0; i < kClients; ++i) wrong += got[i] != Shifted(Pattern(20000 + i, i));
  CHECK(wrong == 0);
  CHECK(relay.relay->accepted() == kClients);
  CHECK(relay.Drained());
}

TEST_CASE("relay: Stop ends Run with connections open") {
  forge::testing::TempDir dir;
  std::promise<void> arrived;
  auto arrived_future = arrived.get_future();
  Target target(UnixAt(dir, "t.sock"), [&arrived](int fd) {
    char buffer[4];
    if (recv(fd, buffer, 4, MSG_WAITALL) == 4) arrived.set_value();
    ReadAll(fd);
  });
  auto relay = std::make_unique<RunningRelay>(target.endpoint);
  int fd = relay->Connect();
  REQUIRE(SendAll(fd, "open"));
  // Once relayed, nothing unread is left to turn the relay's close into a reset.
  REQUIRE(arrived_future.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK(relay->relay->open_connections() == 1);
  relay.reset();  // Stop + join: returns although the client never closed
  int error = -1;
  ReadAll(fd, &error);  // and the client sees its connection end
  close(fd);
  CHECK(error == 0);
}
