// A wakeup one thread gives another without a lock between them (an
// eventfd): the sleeper holds nothing while it sleeps or wakes, and a wakeup
// given while it was busy is kept until its next wait.
#pragma once

#include <chrono>
#include <optional>

#include "base/status.h"

namespace forge {

class Wakeup {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  static Result<Wakeup> Create();
  Wakeup(Wakeup&& other) noexcept;
  Wakeup& operator=(Wakeup&& other) noexcept;
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  ~Wakeup();

  void Give();
  // Returns once a wakeup was given (since the last wait) or at the deadline
  // (none: only the wakeup); true for a wakeup, which it takes.
  bool Wait(std::optional<Deadline> deadline = std::nullopt);

 private:
  explicit Wakeup(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace forge
