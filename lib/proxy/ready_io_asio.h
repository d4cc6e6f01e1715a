// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// Socket I/O that finishes at once when the socket is ready and waits only
// when it is not. Asio completes every asynchronous operation through its
// scheduler, even one whose bytes were already there (a post, then a pass
// over the reactor before the coroutine resumes), and Beast's timed stream
// adds a timer wait and its cancellation to each. On a model call most
// reads and writes need no wait: the proxy makes the non-blocking system
// call first and, only on EAGAIN, waits for readiness. A wait's deadline
// goes in a list of its io_context's waits that one timer per context
// sweeps (SweepExpiredWaits), not in a timer of its own.
#pragma once

#include <chrono>
#include <cstddef>

#include "proxy/asio.h"

namespace forge::proxy {

// Ends the waits on context whose deadline has passed (their socket's
// operations are cancelled; the wait reports beast::error::timeout), and the
// reads whose watched client has hung up (they report ClientHungUp()). Call
// it on the context's own thread.
void SweepExpiredWaits(asio::execution_context& context, std::chrono::steady_clock::time_point now);

// Whether the peer of a connected socket has closed (or half-closed) it or
// reset it: a non-blocking peek. Bytes waiting (a pipelined request) or none
// yet: still there.
bool HasHungUp(const tcp::socket& socket);

// What a read watching a client reports when that client hung up while it
// waited: the upstream's answer has no one to go to (see ReadSomeReady).
const beast::error_code& ClientHungUp();

class WaitList;  // an io_context's waits (ready_io.cpp)

// A wait for an operation on socket (or on a stream over it, such as TLS),
// linked into its io_context's list of waits for as long as it lives, in the
// waiting coroutine's frame (which does not move). The sweep cancels the
// socket's operations once the deadline passes (expired) or the watched
// client hangs up (client_gone).
struct SocketWait {
  SocketWait(tcp::socket& socket, std::chrono::steady_clock::time_point deadline,
             const tcp::socket* watched_client = nullptr);
  ~SocketWait();
  SocketWait(const SocketWait&) = delete;
  SocketWait& operator=(const SocketWait&) = delete;

  WaitList* list;  // null once the context has shut down
  tcp::socket& socket;
  std::chrono::steady_clock::time_point deadline;
  const tcp::socket* watched_client;
  bool expired = false;
  bool client_gone = false;
  SocketWait* prev = nullptr;
  SocketWait* next = nullptr;
};

// Waits until socket can be read or written; timeout in seconds, 0 for none.
Task<void> WaitReady(tcp::socket& socket, tcp::socket::wait_type what, double timeout, beast::error_code& ec);

// Reads some bytes (at least one, or an error: eof when the peer closed);
// when none are there yet, the reactor reads them as they come. With
// watched_client, a wait also ends, within a sweep, once that client has
// hung up (ClientHungUp()): an upstream generating for a client that is
// gone would go on for nothing (nginx aborts such a request too). The sweep
// peeks at the client's socket, so a call that needs no wait costs nothing.
Task<size_t> ReadSomeReady(tcp::socket& socket, asio::mutable_buffer buffer, double timeout, beast::error_code& ec,
                           const tcp::socket* watched_client = nullptr);

// Writes every byte of buffers, waiting only while the socket's send buffer is full.
template <typename ConstBuffers>
Task<void> WriteAllReady(tcp::socket& socket, const ConstBuffers& buffers, double timeout, beast::error_code& ec) {
  ec = {};
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
  beast::buffers_suffix<ConstBuffers> rest(buffers);
  while (!ec && beast::buffer_bytes(rest) > 0) {
    size_t n = socket.write_some(rest, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      co_await WaitReady(socket, tcp::socket::wait_write, timeout, ec);
      continue;
    }
    rest.consume(n);
  }
}

}  // namespace forge::proxy
