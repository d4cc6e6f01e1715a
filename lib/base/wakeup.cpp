#include "base/wakeup.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace forge {

Result<Wakeup> Wakeup::Create() {
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Status::IoError(std::string("eventfd: ") + std::strerror(errno));
  return Wakeup(fd);
}

Wakeup::Wakeup(Wakeup&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

Wakeup& Wakeup::operator=(Wakeup&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Wakeup::~Wakeup() {
  if (fd_ >= 0) close(fd_);
}

void Wakeup::Give() {
  uint64_t one = 1;
  // Fails only when the counter is at its maximum: a wakeup is pending anyway.
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
}

bool Wakeup::Wait(std::optional<Deadline> deadline) {
  for (;;) {
    uint64_t count = 0;
    if (read(fd_, &count, sizeof count) == static_cast<ssize_t>(sizeof count)) return true;
    timespec timeout{};
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(*deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      timeout.tv_sec = static_cast<time_t>(left.count() / 1000000000);
      timeout.tv_nsec = static_cast<long>(left.count() % 1000000000);
    }
    pollfd p{fd_, POLLIN, 0};
    if (ppoll(&p, 1, deadline ? &timeout : nullptr, nullptr) == 0) return false;
  }
}

}  // namespace forge
