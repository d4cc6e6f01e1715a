// forge-box verify's watch on its client (verify/client_watch.h), on a pipe
// standing in for the exec stream's stdin: its end, its silence past the
// heartbeat bound, a client that keeps sending, and a watch ended from
// outside, which says nothing.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include "verify/client_watch.h"

namespace verify_client_watch_test {
using namespace forge::verify;

namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { REQUIRE(pipe2(fd, O_CLOEXEC) == 0); }
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
  void CloseWriter() {
    close(fd[1]);
    fd[1] = -1;
  }
  void Beat() { REQUIRE(write(fd[1], "", 1) == 1); }
};

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

TEST_CASE("client watch: the end of stdin is the client gone, heartbeats before it notwithstanding") {
  Pipe p;
  std::atomic<bool> done{false};
  volatile sig_atomic_t gone = 0;
  std::thread client([&] {
    for (int i = 0; i < 5; ++i) p.Beat(), Sleep(20);
    p.CloseWriter();
  });
  CHECK(WatchClient(p.fd[0], 0, done, &gone) == ClientEnd::kEof);
  client.join();
  CHECK(gone == 1);
}

TEST_CASE("client watch: silence past the heartbeat bound is the client gone though stdin stays open") {
  Pipe p;
  std::atomic<bool> done{false};
  volatile sig_atomic_t gone = 0;
  p.Beat();
  CHECK(WatchClient(p.fd[0], 0.3, done, &gone) == ClientEnd::kSilent);
  CHECK(gone == 1);
}

TEST_CASE("client watch: a client that keeps beating is still there when the watch is ended") {
  Pipe p;
  std::atomic<bool> done{false};
  volatile sig_atomic_t gone = 0;
  std::thread client([&] {
    // Twelve beats 50 ms apart, each well inside the 0.5 s bound.
    for (int i = 0; i < 12; ++i) p.Beat(), Sleep(50);
    done.store(true);
  });
  CHECK(WatchClient(p.fd[0], 0.5, done, &gone) == ClientEnd::kNone);
  client.join();
  CHECK(gone == 0);
}

TEST_CASE("client watch: stdin that is not open is the client gone") {
  std::atomic<bool> done{false};
  volatile sig_atomic_t gone = 0;
  Pipe p;
  const int fd = dup(p.fd[0]);
  close(fd);
  CHECK(WatchClient(fd, 0, done, &gone) == ClientEnd::kError);
  CHECK(gone == 1);
}

}  // namespace verify_client_watch_test
