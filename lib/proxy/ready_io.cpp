#include "proxy/ready_io.h"

namespace forge::proxy {
namespace {

using Clock = std::chrono::steady_clock;

// A wait with a deadline, linked into its thread's list for as long as it
// waits. It lives in the waiting coroutine's frame, which does not move.
struct TimedWait {
  tcp::socket* socket = nullptr;
  Clock::time_point deadline;
  bool expired = false;
  TimedWait* prev = nullptr;
  TimedWait* next = nullptr;
};

// Each io thread runs one io_context, and a connection's coroutines run on
// its context's thread only: the list needs no lock.
thread_local TimedWait* timed_waits = nullptr;

void Link(TimedWait& wait) {
  wait.next = timed_waits;
  if (timed_waits) timed_waits->prev = &wait;
  timed_waits = &wait;
}

void Unlink(TimedWait& wait) {
  if (wait.prev) {
    wait.prev->next = wait.next;
  } else {
    timed_waits = wait.next;
  }
  if (wait.next) wait.next->prev = wait.prev;
}

}  // namespace

void SweepExpiredWaits(Clock::time_point now) {
  for (TimedWait* wait = timed_waits; wait; wait = wait->next) {
    if (wait->expired || wait->deadline > now) continue;
    wait->expired = true;
    beast::error_code ignored;
    wait->socket->cancel(ignored);
  }
}

Task<void> WaitReady(tcp::socket& socket, tcp::socket::wait_type what, double timeout, beast::error_code& ec) {
  if (timeout <= 0) {
    co_await socket.async_wait(what, Into(ec));
    co_return;
  }
  TimedWait wait;
  wait.socket = &socket;
  wait.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
  Link(wait);
  co_await socket.async_wait(what, Into(ec));
  Unlink(wait);
  if (wait.expired) ec = beast::error::timeout;
}

Task<size_t> ReadSomeReady(tcp::socket& socket, net::mutable_buffer buffer, double timeout, beast::error_code& ec) {
  ec = {};
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
  while (!ec) {
    size_t n = socket.read_some(buffer, ec);
    if (ec != net::error::would_block && ec != net::error::try_again) co_return n;
    co_await WaitReady(socket, tcp::socket::wait_read, timeout, ec);
  }
  co_return 0;
}

}  // namespace forge::proxy
