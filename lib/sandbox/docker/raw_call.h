// One HTTP request on its own connection to the engine's unix socket, for
// the two calls libcurl's easy interface cannot make the way `docker run`
// does: a hijacked attach (the container's stdin written while its output is
// read on the same connection) and a wait that is sent before the container
// starts but whose answer is read only after it ran.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace forge::sandbox::docker {

class RawCall {
 public:
  RawCall() = default;
  RawCall(RawCall&& other) noexcept;
  RawCall& operator=(RawCall&& other) noexcept;
  RawCall(const RawCall&) = delete;
  RawCall& operator=(const RawCall&) = delete;
  ~RawCall();

  // Connects and sends the request (no body). upgrade asks the engine to
  // hijack the connection (attach): the answer is 101 and then a raw stream.
  static Result<RawCall> Send(const std::string& socket_path, const std::string& method,
                              const std::string& path, bool upgrade);

  // Reads the status line and headers; returns the status code.
  Result<long> ReadHeader(double timeout_seconds);

  Status Write(std::string_view data);
  // Half-closes the connection: the engine then closes the container's stdin.
  void CloseWrite();

  // Hands body bytes to on_data until the engine closes the connection
  // (Ok), keep_going returns false (Cancelled("aborted"); polled about every
  // 100 ms) or the connection fails. A chunked body is de-chunked.
  Status ReadBody(const std::function<void(std::string_view)>& on_data,
                  const std::function<bool()>& keep_going);

 private:
  explicit RawCall(int fd) : fd_(fd) {}
  // Reads what is available, waiting up to timeout_ms; 0 bytes at the end.
  Result<size_t> ReadSome(std::string& into, int timeout_ms);

  int fd_ = -1;
  std::string pending_;  // bytes read past the header
  bool chunked_ = false;
};

// Undoes HTTP/1.1 chunked transfer coding of a complete body.
Result<std::string> Dechunk(std::string_view body);

}  // namespace forge::sandbox::docker
