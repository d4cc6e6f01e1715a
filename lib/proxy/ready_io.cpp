#include "proxy/ready_io_asio.h"

#include <sys/socket.h>

#include <cerrno>

#include "proxy/asio.h"

namespace forge::proxy {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

// The timed waits of one io_context, owned by it (an asio service). A
// context runs on one thread and a connection's coroutines on its context
// only, so the list needs no lock.
class WaitList : public asio::execution_context::service {
 public:
  using key_type = WaitList;
  static inline asio::execution_context::id id;

  explicit WaitList(asio::execution_context& context) : service(context) {}

  SocketWait* head = nullptr;

 private:
  // Before the context destroys the frames still waiting: they must not
  // unlink themselves from a list that is gone.
  void shutdown() override {
    for (SocketWait* wait = head; wait; wait = wait->next) wait->list = nullptr;
    head = nullptr;
  }
};

SocketWait::SocketWait(tcp::socket& socket, Clock::time_point deadline, const tcp::socket* watched_client)
    : list(&asio::use_service<WaitList>(socket.get_executor().context())),
      socket(socket),
      deadline(deadline),
      watched_client(watched_client),
      next(list->head) {
  if (next) next->prev = this;
  list->head = this;
}

SocketWait::~SocketWait() {
  if (!list) return;
  if (prev) {
    prev->next = next;
  } else {
    list->head = next;
  }
  if (next) next->prev = prev;
}

bool HasHungUp(const tcp::socket& socket) {
  char byte;
  ssize_t n = recv(const_cast<tcp::socket&>(socket).native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

namespace {

class ProxyErrorCategory : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "forge-proxy"; }
  std::string message(int) const override { return "the client hung up"; }
};

}  // namespace

const beast::error_code& ClientHungUp() {
  static const ProxyErrorCategory category;
  static const beast::error_code code(1, category);
  return code;
}

void SweepExpiredWaits(asio::execution_context& context, Clock::time_point now) {
  for (SocketWait* wait = asio::use_service<WaitList>(context).head; wait; wait = wait->next) {
    if (wait->expired || wait->client_gone) continue;
    if (wait->deadline <= now) {
      wait->expired = true;
    } else if (wait->watched_client && HasHungUp(*wait->watched_client)) {
      wait->client_gone = true;
    } else {
      continue;
    }
    beast::error_code ignored;
    wait->socket.cancel(ignored);
  }
}

Task<void> WaitReady(tcp::socket& socket, tcp::socket::wait_type what, double timeout, beast::error_code& ec) {
  if (timeout <= 0) {
    co_await socket.async_wait(what, Into(ec));
    co_return;
  }
  SocketWait wait(socket, Clock::now() + SteadySeconds(timeout));
  co_await socket.async_wait(what, Into(ec));
  if (wait.expired) ec = beast::error::timeout;
}

Task<size_t> ReadSomeReady(tcp::socket& socket, asio::mutable_buffer buffer, double timeout, beast::error_code& ec,
                           const tcp::socket* watched_client) {
  ec = {};
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
  if (ec) co_return 0;
  size_t n = socket.read_some(buffer, ec);
  if (ec != asio::error::would_block && ec != asio::error::try_again) co_return n;
  // Nothing yet: the reactor reads when the bytes come. (A read operation, not
  // async_wait(wait_read): Asio re-arms the descriptor with an epoll_ctl
  // system call for every async_wait; a read waits without one.)
  ec = {};
  if (timeout <= 0 && !watched_client) co_return co_await socket.async_read_some(buffer, Into(ec));
  SocketWait wait(socket, timeout > 0 ? Clock::now() + SteadySeconds(timeout) : Clock::time_point::max(),
                  watched_client);
  n = co_await socket.async_read_some(buffer, Into(ec));
  if (wait.expired && ec) ec = beast::error::timeout;  // (bytes that beat the sweep are kept)
  if (wait.client_gone && ec) ec = ClientHungUp();
  co_return n;
}

}  // namespace forge::proxy
