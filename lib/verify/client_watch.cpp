#include "verify/client_watch.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "base/clock.h"

namespace forge::verify {

const char* ClientEndWhy(ClientEnd end) {
  switch (end) {
    case ClientEnd::kNone: return "the client is still there";
    case ClientEnd::kEof: return "the stream's stdin ended";
    case ClientEnd::kSilent: return "the client sent no heartbeat within its bound";
    case ClientEnd::kError: return "the stream's stdin cannot be read";
  }
  return "";
}

namespace {

// One look at fd: kNone while the client is there (*seen moved on a byte).
ClientEnd Look(int fd, double* seen) {
  pollfd p{fd, POLLIN, 0};
  const int ready = poll(&p, 1, 100);
  if (ready < 0) return errno == EINTR ? ClientEnd::kNone : ClientEnd::kError;
  if (ready == 0) return ClientEnd::kNone;
  if ((p.revents & POLLNVAL) != 0) return ClientEnd::kError;
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0) *seen = MonotonicSeconds();
  if (n == 0) return ClientEnd::kEof;
  if (n < 0 && errno != EINTR && errno != EAGAIN) return ClientEnd::kError;
  return ClientEnd::kNone;
}

}  // namespace

ClientEnd WatchClient(int fd, double heartbeat_seconds, const std::atomic<bool>& done, volatile sig_atomic_t* gone) {
  double seen = MonotonicSeconds();
  while (!done.load()) {
    ClientEnd end = Look(fd, &seen);
    if (end == ClientEnd::kNone && heartbeat_seconds > 0 && MonotonicSeconds() > seen + heartbeat_seconds) {
      end = ClientEnd::kSilent;
    }
    if (end != ClientEnd::kNone) {
      *gone = 1;
      return end;
    }
  }
  return ClientEnd::kNone;
}

}  // namespace forge::verify
