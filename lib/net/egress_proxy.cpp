#include "net/egress_proxy.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <sstream>

namespace forge::net {

struct EgressProxy::State {
  int listen_fd = -1;
  size_t max_connections = 256;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> accepted{0};
  std::mutex mutex;
  std::condition_variable done;
  size_t active = 0;  // guarded by mutex
};

namespace {

constexpr size_t kMaxHead = 16 << 10;
constexpr int kPollMs = 500;

void SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void Refuse(int fd, const char* status) {
  SendAll(fd, std::string("HTTP/1.1 ") + status + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

// A TCP connection to host:port, tried address by address; -1 if none.
int Connect(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

// Copies both ways until both directions are closed or the proxy stops; a
// side's EOF is passed on as shutdown(SHUT_WR).
void Splice(int a, int b, const std::atomic<bool>& stop) {
  bool open[2] = {true, true};  // a->b, b->a
  char buf[64 << 10];
  while ((open[0] || open[1]) && !stop.load()) {
    pollfd fds[2] = {{a, static_cast<short>(open[0] ? POLLIN : 0), 0}, {b, static_cast<short>(open[1] ? POLLIN : 0), 0}};
    const int ready = poll(fds, 2, kPollMs);
    if (ready < 0 && errno != EINTR) return;
    for (int side = 0; side < 2; ++side) {
      if (!open[side] || !(fds[side].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const int from = side == 0 ? a : b, to = side == 0 ? b : a;
      const ssize_t n = recv(from, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return;  // a reset: both go
      if (n == 0) {
        shutdown(to, SHUT_WR);
        open[side] = false;
        continue;
      }
      SendAll(to, std::string_view(buf, static_cast<size_t>(n)));
    }
  }
}

void Serve(int client, const std::shared_ptr<EgressProxy::State>& state) {
  std::string head;
  char buf[4096];
  size_t end = std::string::npos;
  while ((end = head.find("\r\n\r\n")) == std::string::npos && head.size() < kMaxHead && !state->stop.load()) {
    pollfd fd = {client, POLLIN, 0};
    if (poll(&fd, 1, kPollMs) <= 0) continue;
    const ssize_t n = recv(client, buf, sizeof buf, 0);
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  if (end == std::string::npos) return Refuse(client, "400 Bad Request");
  auto request = ParseEgressRequest(head.substr(0, end + 4));
  if (!request.ok()) return Refuse(client, "400 Bad Request");
  const int origin = Connect(request->host, request->port);
  if (origin < 0) return Refuse(client, "502 Bad Gateway");
  if (request->forwarded.empty()) {
    SendAll(client, "HTTP/1.1 200 Connection Established\r\n\r\n");
  } else {
    SendAll(origin, request->forwarded);
  }
  SendAll(origin, std::string_view(head).substr(end + 4));  // what followed the head
  Splice(client, origin, state->stop);
  close(origin);
}

void Accept(const std::shared_ptr<EgressProxy::State>& state) {
  while (!state->stop.load()) {
    pollfd fd = {state->listen_fd, POLLIN, 0};
    if (poll(&fd, 1, kPollMs) <= 0) continue;
    const int client = accept4(state->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    state->accepted.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (state->active >= state->max_connections) {
        Refuse(client, "503 Service Unavailable");
        close(client);
        continue;
      }
      ++state->active;
    }
    std::thread([client, state] {
      Serve(client, state);
      close(client);
      std::lock_guard<std::mutex> lock(state->mutex);
      --state->active;
      state->done.notify_all();
    }).detach();
  }
}

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

Result<EgressRequest> ParseEgressRequest(const std::string& head) {
  const size_t line_end = head.find("\r\n");
  std::istringstream line(head.substr(0, line_end));
  std::string method, target, version;
  line >> method >> target >> version;
  if (method.empty() || target.empty() || version.rfind("HTTP/1.", 0) != 0) {
    return Status::InvalidData("not an HTTP/1 request line");
  }
  EgressRequest request;
  std::string authority;
  std::string path = "/";
  if (method == "CONNECT") {
    authority = target;
  } else if (target.rfind("http://", 0) == 0) {
    const size_t slash = target.find('/', 7);
    authority = target.substr(7, slash == std::string::npos ? std::string::npos : slash - 7);
    if (slash != std::string::npos) path = target.substr(slash);
  } else {
    return Status::InvalidData("expected CONNECT host:port or an absolute http:// URL");
  }
  const size_t colon = authority.rfind(':');
  const bool bracketed = !authority.empty() && authority[0] == '[';
  const size_t close_bracket = authority.find(']');
  if (colon != std::string::npos && (!bracketed || colon > close_bracket)) {
    request.host = authority.substr(0, colon);
    request.port = authority.substr(colon + 1);
  } else if (method != "CONNECT") {
    request.host = authority;
    request.port = "80";
  }
  if (bracketed && request.host.size() > 2) request.host = request.host.substr(1, request.host.size() - 2);
  if (request.host.empty() || request.port.empty()) return Status::InvalidData("no host:port in " + target);
  if (method == "CONNECT") return request;
  // Origin form, hop-by-hop proxy headers dropped, one request per connection.
  request.forwarded = method + " " + path + " " + version + "\r\n";
  size_t at = line_end + 2;
  while (at < head.size()) {
    const size_t eol = head.find("\r\n", at);
    const std::string header = head.substr(at, eol - at);
    at = eol == std::string::npos ? head.size() : eol + 2;
    if (header.empty()) break;
    const std::string name = Lower(header.substr(0, header.find(':')));
    if (name == "proxy-connection" || name == "proxy-authorization" || name == "connection" || name == "keep-alive") {
      continue;
    }
    request.forwarded += header + "\r\n";
  }
  request.forwarded += "Connection: close\r\n\r\n";
  return request;
}

Result<std::unique_ptr<EgressProxy>> EgressProxy::Start(int listen_fd, size_t max_connections) {
  std::unique_ptr<EgressProxy> proxy(new EgressProxy());
  proxy->state_ = std::make_shared<State>();
  proxy->state_->listen_fd = listen_fd;
  proxy->state_->max_connections = max_connections;
  auto state = proxy->state_;
  proxy->acceptor_ = std::thread([state] { Accept(state); });
  return proxy;
}

EgressProxy::~EgressProxy() {
  state_->stop.store(true);
  if (acceptor_.joinable()) acceptor_.join();
  close(state_->listen_fd);
  std::unique_lock<std::mutex> lock(state_->mutex);
  // Each connection's thread notices the stop within one poll.
  state_->done.wait_for(lock, std::chrono::seconds(5), [&] { return state_->active == 0; });
}

uint64_t EgressProxy::accepted() const { return state_->accepted.load(); }

}  // namespace forge::net
