#include "net/relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace forge::net {
namespace {

using Clock = std::chrono::steady_clock;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Bytes read from one side and not yet written to the other.
struct Buffer {
  std::string data;
  size_t sent = 0;
  size_t pending() const { return data.size() - sent; }
};

enum class Io { kProgress, kAgain, kEof, kError };

Io ReadInto(int fd, Buffer& buffer, size_t cap) {
  if (buffer.sent > 0 && buffer.sent * 2 >= buffer.data.size()) {
    buffer.data.erase(0, buffer.sent);
    buffer.sent = 0;
  }
  const size_t room = cap > buffer.pending() ? cap - buffer.pending() : 0;
  if (room == 0) return Io::kAgain;
  const size_t old = buffer.data.size();
  buffer.data.resize(old + room);
  ssize_t n;
  do {
    n = recv(fd, buffer.data.data() + old, room, 0);
  } while (n < 0 && errno == EINTR);
  buffer.data.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
  if (n > 0) return Io::kProgress;
  if (n == 0) return Io::kEof;
  return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kAgain : Io::kError;
}

Io Flush(int fd, Buffer& buffer) {
  while (buffer.pending() > 0) {
    ssize_t n = send(fd, buffer.data.data() + buffer.sent, buffer.pending(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kAgain : Io::kError;
    }
    buffer.sent += static_cast<size_t>(n);
  }
  buffer.data.clear();
  buffer.sent = 0;
  return Io::kProgress;
}

// Closes with a TCP reset (SO_LINGER 0) where the socket is TCP, so the peer
// sees a failure, not a clean end of stream.
void CloseReset(int fd) {
  if (fd < 0) return;
  linger hard = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  close(fd);
}

Result<int> NewSocket(const Endpoint& endpoint) {
  int fd = socket(endpoint.kind == Endpoint::Kind::kUnix ? AF_UNIX : AF_INET,
                  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(Errno("socket"));
  return fd;
}

// The sockaddr for an endpoint already checked by ParseEndpoint.
socklen_t Address(const Endpoint& endpoint, sockaddr_storage& storage) {
  std::memset(&storage, 0, sizeof storage);
  if (endpoint.kind == Endpoint::Kind::kUnix) {
    auto* un = reinterpret_cast<sockaddr_un*>(&storage);
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, endpoint.path.data(), endpoint.path.size());
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + endpoint.path.size() + 1);
  }
  auto* in = reinterpret_cast<sockaddr_in*>(&storage);
  in->sin_family = AF_INET;
  in->sin_port = htons(endpoint.port);
  inet_pton(AF_INET, endpoint.host.c_str(), &in->sin_addr);
  return sizeof(sockaddr_in);
}

}  // namespace

std::string Endpoint::ToString() const {
  return kind == Kind::kUnix ? "unix:" + path : host + ":" + std::to_string(port);
}

Result<Endpoint> ParseEndpoint(std::string_view text) {
  Endpoint endpoint;
  const std::string quoted = "endpoint '" + std::string(text) + "'";
  if (text.substr(0, 5) == "unix:") {
    endpoint.kind = Endpoint::Kind::kUnix;
    endpoint.path = std::string(text.substr(5));
    if (endpoint.path.empty() || endpoint.path[0] != '/') {
      return Status::InvalidArgument(quoted + ": a unix socket needs an absolute path (unix:/PATH)");
    }
    if (endpoint.path.size() >= sizeof(sockaddr_un::sun_path)) {
      return Status::InvalidArgument(quoted + ": the socket path is longer than " +
                           std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
    }
    return endpoint;
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return Status::InvalidArgument(quoted + ": expected IPV4:PORT or unix:/PATH");
  }
  endpoint.host = std::string(text.substr(0, colon));
  in_addr ignored;
  if (inet_pton(AF_INET, endpoint.host.c_str(), &ignored) != 1) {
    return Status::InvalidArgument(quoted + ": '" + endpoint.host + "' is not an IPv4 address");
  }
  const std::string_view port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoul(std::string(port)) > 65535) {
    return Status::InvalidArgument(quoted + ": port must be 0-65535");
  }
  endpoint.port = static_cast<uint16_t>(std::stoul(std::string(port)));
  return endpoint;
}

Result<int> Listen(const Endpoint& endpoint, unsigned mode) {
  auto made = NewSocket(endpoint);
  if (!made.ok()) return made.status();
  const int fd = *made;
  const std::string where = "listen on " + endpoint.ToString();
  if (endpoint.kind == Endpoint::Kind::kUnix) {
    struct stat st;
    if (lstat(endpoint.path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        close(fd);
        return Status::CannotCreate(where + ": the path exists and is not a socket");
      }
      unlink(endpoint.path.c_str());  // left by an earlier process
    }
  } else {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  }
  sockaddr_storage address;
  socklen_t length = Address(endpoint, address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    Status failed = Status::Unavailable(Errno(where));
    close(fd);
    return failed;
  }
  if (endpoint.kind == Endpoint::Kind::kUnix && mode != 0 && chmod(endpoint.path.c_str(), mode) != 0) {
    Status failed = Status::CannotCreate(Errno("chmod " + endpoint.path));
    close(fd);
    return failed;
  }
  if (listen(fd, SOMAXCONN) != 0) {
    Status failed = Status::Unavailable(Errno(where));
    close(fd);
    return failed;
  }
  return fd;
}

Result<uint16_t> BoundPort(int listen_fd) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  if (getsockname(listen_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return Status::IoError(Errno("getsockname"));
  }
  return ntohs(address.sin_port);
}

struct Relay::Connection {
  int client = -1;
  int target = -1;
  bool connecting = true;      // target connect in progress
  bool client_eof = false;     // the client sent its last byte
  bool target_eof = false;
  bool client_shut = false;    // we passed the target's EOF on to the client
  bool target_shut = false;
  bool done = false;
  Buffer up;    // client -> target
  Buffer down;  // target -> client

  ~Connection() {
    if (client >= 0) close(client);
    if (target >= 0) close(target);
  }
  void Reset() {
    CloseReset(client);
    CloseReset(target);
    client = target = -1;
    done = true;
  }
};

Relay::Relay(int listen_fd, Endpoint target, RelayLimits limits)
    : listen_fd_(listen_fd), target_(std::move(target)), limits_(limits) {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

Relay::~Relay() {
  connections_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_[0] >= 0) close(wake_[0]);
  if (wake_[1] >= 0) close(wake_[1]);
}

void Relay::Stop() {
  if (wake_[1] < 0) return;
  char byte = 1;
  ssize_t ignored = write(wake_[1], &byte, 1);
  (void)ignored;
}

void Relay::Accept() {
  // A bounded batch per round, so a flood of connects cannot starve the
  // connections already open.
  for (int i = 0; i < 64 && connections_.size() < limits_.max_connections; ++i) {
    int client = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        // Out of descriptors or memory: stop accepting for a moment rather
        // than spin on a listening socket that stays readable.
        accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    accepted_.fetch_add(1);
    auto c = std::make_unique<Connection>();
    c->client = client;
    auto target = NewSocket(target_);
    if (!target.ok()) {
      failed_connects_.fetch_add(1);
      c->Reset();
      continue;
    }
    c->target = *target;
    sockaddr_storage address;
    socklen_t length = Address(target_, address);
    int rc;
    do {
      rc = connect(c->target, reinterpret_cast<sockaddr*>(&address), length);
    } while (rc != 0 && errno == EINTR);
    if (rc == 0) {
      c->connecting = false;
    } else if (errno != EINPROGRESS) {
      // Refused, no such socket, or (unix) a full backlog: the client hears
      // a reset at once instead of waiting on a connection that cannot be.
      failed_connects_.fetch_add(1);
      c->Reset();
      continue;
    }
    connections_.push_back(std::move(c));
    open_.store(connections_.size());
  }
}

void Relay::Service(Connection& c, short client_events, short target_events) {
  const size_t cap = limits_.buffer_bytes;
  if (c.connecting) {
    if (!(target_events & (POLLOUT | POLLERR | POLLHUP))) {
      // Still connecting; the client's bytes wait (up to cap) meanwhile.
      target_events = 0;
    } else {
      int error = 0;
      socklen_t length = sizeof error;
      getsockopt(c.target, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        failed_connects_.fetch_add(1);
        c.Reset();
        return;
      }
      c.connecting = false;
    }
  }
  if (!c.client_eof && (client_events & (POLLIN | POLLHUP | POLLERR))) {
    switch (ReadInto(c.client, c.up, cap)) {
      case Io::kError: c.Reset(); return;
      case Io::kEof: c.client_eof = true; break;
      default: break;
    }
  }
  if (!c.connecting && !c.target_eof && (target_events & (POLLIN | POLLHUP | POLLERR))) {
    switch (ReadInto(c.target, c.down, cap)) {
      case Io::kError: c.Reset(); return;
      case Io::kEof: c.target_eof = true; break;
      default: break;
    }
  }
  // Writes are tried whenever something waits: a non-blocking send that
  // cannot go on says so, and most rounds it saves a poll.
  if (!c.connecting && c.up.pending() > 0 && Flush(c.target, c.up) == Io::kError) {
    c.Reset();
    return;
  }
  if (c.down.pending() > 0 && Flush(c.client, c.down) == Io::kError) {
    c.Reset();
    return;
  }
  if (!c.connecting && c.client_eof && c.up.pending() == 0 && !c.target_shut) {
    shutdown(c.target, SHUT_WR);
    c.target_shut = true;
  }
  if (c.target_eof && c.down.pending() == 0 && !c.client_shut) {
    shutdown(c.client, SHUT_WR);
    c.client_shut = true;
  }
  if (c.client_shut && c.target_shut) c.done = true;  // both ways ended and flushed
}

Status Relay::Run() {
  if (wake_[0] < 0) return Status::Unavailable("relay: cannot create its wake-up pipe");
  const size_t cap = limits_.buffer_bytes;
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    const auto now = Clock::now();
    const bool paused = now < accept_paused_until_;
    const bool accepting = !paused && connections_.size() < limits_.max_connections;
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    for (const auto& c : connections_) {
      short client = 0, target = 0;
      if (!c->client_eof && c->up.pending() < cap) client |= POLLIN;
      if (c->down.pending() > 0) client |= POLLOUT;
      if (c->connecting) {
        target = POLLOUT;
      } else {
        if (!c->target_eof && c->down.pending() < cap) target |= POLLIN;
        if (c->up.pending() > 0) target |= POLLOUT;
      }
      // A side we want nothing from is left out, so its hang-up cannot wake
      // the loop again and again while the other side's buffer is full.
      fds.push_back({client ? c->client : -1, client, 0});
      fds.push_back({target ? c->target : -1, target, 0});
    }
    int n = poll(fds.data(), fds.size(), paused ? 100 : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(Errno("relay: poll"));
    }
    if (fds[0].revents) break;
    for (size_t i = 0; i < connections_.size(); ++i) {
      const short client = fds[2 + 2 * i].revents, target = fds[3 + 2 * i].revents;
      if (client || target) Service(*connections_[i], client, target);
    }
    if (fds[1].revents & POLLIN) Accept();
    connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                      [](const auto& c) { return c->done; }),
                       connections_.end());
    open_.store(connections_.size());
  }
  char drain[64];
  while (read(wake_[0], drain, sizeof drain) > 0) {
  }
  connections_.clear();
  open_.store(0);
  return Status::Ok();
}

}  // namespace forge::net
