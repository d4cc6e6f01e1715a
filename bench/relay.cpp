// What --network proxy-only's two relays cost a harness's connection:
// round trips of a small request/answer (the shape of a model call's
// framing) and bulk bytes, (a) straight to a TCP echo server on 127.0.0.1
// — the baseline, what --network host gives — and (b) through the same path
// as proxy-only: net::Relay TCP→unix (forge-relay in the sandbox) then
// net::Relay unix→TCP (forge-launch's host relay). Loopback only.
//
//   bench-relay [ROUND_TRIPS=20000] [MIB=256]
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "net/relay.h"

namespace {

using Clock = std::chrono::steady_clock;
using forge::net::Endpoint;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool SendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

struct Figures {
  double round_trip_us;
  double mib_per_s;
};

Figures Measure(uint16_t port, int round_trips, int mib) {
  Figures f{};
  int fd = Connect(port);
  std::string message(1024, 'x');
  char buffer[1 << 16];
  auto t = Clock::now();
  for (int i = 0; i < round_trips; ++i) {
    SendAll(fd, message.data(), message.size());
    size_t got = 0;
    while (got < message.size()) {
      ssize_t n = recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) std::exit(1);
      got += static_cast<size_t>(n);
    }
  }
  f.round_trip_us = Since(t) / round_trips * 1e6;
  // Bulk: a writer thread sends, this one reads the echo.
  const size_t total = static_cast<size_t>(mib) << 20;
  std::string chunk(1 << 16, 'y');
  t = Clock::now();
  std::thread writer([&] {
    for (size_t sent = 0; sent < total; sent += chunk.size()) SendAll(fd, chunk.data(), chunk.size());
  });
  size_t got = 0;
  while (got < total) {
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) std::exit(1);
    got += static_cast<size_t>(n);
  }
  writer.join();
  f.mib_per_s = mib / Since(t);
  close(fd);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const int round_trips = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int mib = argc > 2 ? std::atoi(argv[2]) : 256;

  auto echo_fd = forge::net::Listen(*forge::net::ParseEndpoint("127.0.0.1:0"));
  if (!echo_fd.ok()) return 1;
  const uint16_t echo_port = *forge::net::BoundPort(*echo_fd);
  int blocking = *echo_fd;
  std::thread([blocking] {
    // The echo server, a thread per connection (Listen's socket is non-blocking).
    for (;;) {
      fd_set set;
      FD_ZERO(&set);
      FD_SET(blocking, &set);
      if (select(blocking + 1, &set, nullptr, nullptr, nullptr) < 0) return;
      int c = accept(blocking, nullptr, nullptr);
      if (c < 0) continue;
      std::thread([c] {
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char buffer[1 << 16];
        for (;;) {
          ssize_t n = recv(c, buffer, sizeof buffer, 0);
          if (n <= 0 || !SendAll(c, buffer, static_cast<size_t>(n))) break;
        }
        close(c);
      }).detach();
    }
  }).detach();

  // The host half: unix socket -> the echo server's TCP port.
  char dir[] = "/tmp/bench-relay-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  Endpoint sock = *forge::net::ParseEndpoint(std::string("unix:") + dir + "/proxy.sock");
  forge::net::Relay host(*forge::net::Listen(sock), *forge::net::ParseEndpoint("127.0.0.1:" + std::to_string(echo_port)));
  std::thread host_thread([&] { (void)host.Run(); });
  // The sandbox half: TCP -> that unix socket.
  auto sandbox_fd = forge::net::Listen(*forge::net::ParseEndpoint("127.0.0.1:0"));
  const uint16_t relay_port = *forge::net::BoundPort(*sandbox_fd);
  forge::net::Relay sandbox(*sandbox_fd, sock);
  std::thread sandbox_thread([&] { (void)sandbox.Run(); });

  std::printf("bench-relay: %d round trips of 1 KiB, then %d MiB each way, over 127.0.0.1\n", round_trips, mib);
  Figures direct = Measure(echo_port, round_trips, mib);
  Figures relayed = Measure(relay_port, round_trips, mib);
  std::printf("%-44s %12s %12s\n", "", "round trip", "bulk");
  std::printf("%-44s %9.1f us %7.0f MiB/s\n", "(a) direct TCP (baseline, --network host)", direct.round_trip_us,
              direct.mib_per_s);
  std::printf("%-44s %9.1f us %7.0f MiB/s\n", "(b) TCP->relay->unix->relay->TCP (proxy-only)",
              relayed.round_trip_us, relayed.mib_per_s);
  std::printf("added per round trip: %.1f us; bulk ratio (b)/(a): %.2f\n",
              relayed.round_trip_us - direct.round_trip_us, relayed.mib_per_s / direct.mib_per_s);
  sandbox.Stop();
  host.Stop();
  sandbox_thread.join();
  host_thread.join();
  unlink((std::string(dir) + "/proxy.sock").c_str());
  rmdir(dir);
  return 0;
}
