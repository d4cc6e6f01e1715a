#include "base/stop_token.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <thread>
#include <vector>

namespace forge {

StopToken::StopToken(const StopToken* parent)
    : parent_(parent), fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

StopToken::~StopToken() {
  if (fd_ >= 0) close(fd_);
}

void StopToken::Request(int reason) noexcept {
  int expected = 0;
  if (!reason_.compare_exchange_strong(expected, reason)) return;
  if (fd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
  }
}

bool StopToken::requested() const { return reason() != 0; }

int StopToken::reason() const {
  for (const StopToken* t = this; t != nullptr; t = t->parent_) {
    if (int r = t->reason_.load(); r != 0) return r;
  }
  return 0;
}

bool StopToken::WaitFor(std::chrono::duration<double> timeout) const {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  std::vector<pollfd> fds;
  for (const StopToken* t = this; t != nullptr; t = t->parent_) fds.push_back({t->fd_, POLLIN, 0});
  for (;;) {
    if (requested()) return true;
    // Rounded up: a wait never ends before its timeout.
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    bool pollable = true;
    for (const pollfd& p : fds) pollable = pollable && p.fd >= 0;
    if (!pollable) {
      // No eventfd (the process ran out of descriptors): short sleeps instead.
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<long long>(left, 50)));
      continue;
    }
    if (poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 1 << 30))) < 0 && errno != EINTR) {
      return requested();
    }
  }
}

void StopToken::ResetForTesting() {
  reason_.store(0);
  if (fd_ >= 0) {
    uint64_t count = 0;
    [[maybe_unused]] ssize_t n = read(fd_, &count, sizeof count);
  }
}

}  // namespace forge
