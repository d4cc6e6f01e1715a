#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "base/wakeup.h"

using namespace std::chrono_literals;

TEST_CASE("a wakeup given before the wait is kept, taken once, and a deadline ends a wait") {
  auto wakeup = forge::Wakeup::Create();
  REQUIRE(wakeup.ok());
  wakeup->Give();
  wakeup->Give();  // two before a wait are one wakeup
  CHECK(wakeup->Wait(std::chrono::steady_clock::now() + 1s));
  auto start = std::chrono::steady_clock::now();
  CHECK(!wakeup->Wait(start + 30ms));
  CHECK(std::chrono::steady_clock::now() - start >= 30ms);
  CHECK(!wakeup->Wait(start));  // a deadline already past: no sleep
}

TEST_CASE("a wakeup from another thread ends a wait without a deadline") {
  auto wakeup = forge::Wakeup::Create();
  REQUIRE(wakeup.ok());
  std::thread giver([&] {
    std::this_thread::sleep_for(20ms);
    wakeup->Give();
  });
  CHECK(wakeup->Wait());
  giver.join();
}
