#include "sandbox/docker/raw_call.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace forge::sandbox::docker {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

RawCall::RawCall(RawCall&& other) noexcept
    : fd_(other.fd_), pending_(std::move(other.pending_)), chunked_(other.chunked_) {
  other.fd_ = -1;
}

RawCall& RawCall::operator=(RawCall&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    pending_ = std::move(other.pending_);
    chunked_ = other.chunked_;
    other.fd_ = -1;
  }
  return *this;
}

RawCall::~RawCall() {
  if (fd_ >= 0) close(fd_);
}

Result<RawCall> RawCall::Send(const std::string& socket_path, const std::string& method,
                              const std::string& path, bool upgrade) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    return Status::BadConfig("Docker socket path too long: " + socket_path);
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  RawCall call(fd);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::Unavailable("Docker engine at " + socket_path + ": " + std::strerror(errno));
  }
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: docker\r\nContent-Length: 0\r\n";
  request += upgrade ? "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" : "Connection: close\r\n\r\n";
  FORGE_RETURN_IF_ERROR(call.Write(request));
  return call;
}

Status RawCall::Write(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(std::string("Docker engine: write: ") + std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

void RawCall::CloseWrite() {
  if (fd_ >= 0) shutdown(fd_, SHUT_WR);
}

Result<size_t> RawCall::ReadSome(std::string& into, int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  int ready = poll(&p, 1, timeout_ms);
  if (ready < 0) {
    if (errno == EINTR) return size_t{0};
    return Status::Unavailable(std::string("Docker engine: poll: ") + std::strerror(errno));
  }
  if (ready == 0) return Status::Busy("no data yet");
  char buffer[16384];
  ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return Status::Busy("no data yet");
    return Status::Unavailable(std::string("Docker engine: read: ") + std::strerror(errno));
  }
  into.append(buffer, static_cast<size_t>(n));
  return static_cast<size_t>(n);
}

Result<long> RawCall::ReadHeader(double timeout_seconds) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  size_t end;
  while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
    if (std::chrono::steady_clock::now() > until) {
      return Status::Busy("Docker engine: no answer within " +
                          std::to_string(static_cast<int>(timeout_seconds)) + " s");
    }
    auto n = ReadSome(pending_, 100);
    if (!n.ok()) {
      if (n.status().kind() == Kind::kBusy) continue;
      return n.status();
    }
    if (*n == 0) return Status::Unavailable("Docker engine closed the connection before answering");
    if (pending_.size() > 65536) return Status::Protocol("Docker engine: header too long");
  }
  std::string header = pending_.substr(0, end);
  pending_.erase(0, end + 4);
  // "HTTP/1.1 101 UPGRADED"
  long status = 0;
  size_t space = header.find(' ');
  if (!header.starts_with("HTTP/") || space == std::string::npos) {
    return Status::Protocol("Docker engine: malformed status line");
  }
  status = std::strtol(header.c_str() + space + 1, nullptr, 10);
  const std::string lower = Lower(header);
  chunked_ = lower.find("transfer-encoding: chunked") != std::string::npos;
  return status;
}

Status RawCall::ReadBody(const std::function<void(std::string_view)>& on_data,
                         const std::function<bool()>& keep_going) {
  std::string chunked_body;
  auto deliver = [&](std::string& bytes) {
    if (bytes.empty()) return;
    if (chunked_) {
      chunked_body += bytes;
    } else {
      on_data(bytes);
    }
    bytes.clear();
  };
  deliver(pending_);
  std::string buffer;
  for (;;) {
    if (!keep_going()) return Status::Cancelled("aborted");
    auto n = ReadSome(buffer, 100);
    if (!n.ok()) {
      if (n.status().kind() == Kind::kBusy) continue;
      return n.status();
    }
    if (*n == 0) break;
    deliver(buffer);
  }
  if (chunked_) {
    auto body = Dechunk(chunked_body);
    if (!body.ok()) return body.status();
    if (!body->empty()) on_data(*body);
  }
  return Status::Ok();
}

Result<std::string> Dechunk(std::string_view body) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    size_t line_end = body.find("\r\n", pos);
    if (line_end == std::string_view::npos) return Status::Protocol("chunked body: cut short");
    std::string size_text(body.substr(pos, line_end - pos));
    char* parsed_end = nullptr;
    unsigned long size = std::strtoul(size_text.c_str(), &parsed_end, 16);
    if (parsed_end == size_text.c_str()) return Status::Protocol("chunked body: bad chunk size");
    pos = line_end + 2;
    if (size == 0) return out;
    if (pos + size + 2 > body.size()) return Status::Protocol("chunked body: cut short");
    out.append(body.substr(pos, size));
    pos += size + 2;
  }
}

}  // namespace forge::sandbox::docker
