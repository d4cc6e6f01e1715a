// A call's record is committed exactly once on every way a call can end
// (call_record.h's CallRecording, driven by call_handler_asio.h): the whole
// proxy (RunProxy) on loopback, in front of an upstream scripted here, one
// rollout per path, and the store read afterwards. A retried attempt is a
// record of its own, beside the call's one.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proxy/proxy.h"
#include "store/store.h"
#include "support/fake_env.h"
#include "support/open_store.h"
#include "support/temp_dir.h"

// A namespace of its own, so that its names reach no other file of a unity build.
namespace proxy_commit_test {

int Listen(uint16_t& port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(fd, 64) == 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// An HTTP request read whole (head, and a body of Content-Length bytes).
std::string ReadRequest(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t at = in.find("ontent-Length: ");
      size_t length = at == std::string::npos ? 0 : std::stoul(in.substr(at + 15));
      if (in.size() >= end + 4 + length) return in;
    }
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return in;
    in.append(buf, static_cast<size_t>(n));
  }
}

std::string Answer(int status, const std::string& content_type, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

constexpr const char* kChat =
    R"({"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})";
constexpr const char* kMessage =
    R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}})";
constexpr const char* kChunk =
    R"(data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"w "}}]})"
    "\n\n";

// An upstream that answers by the word after "mode:" in the request: ok
// (chat, or a Messages answer on /v1/messages), fail (500), dies (closes
// without a byte), retry (503 the first time, then ok), slow (a stream of
// an event each 20 ms, until the proxy stops reading or 5 s pass).
class ScriptedUpstream {
 public:
  ScriptedUpstream() : fd_(Listen(port_)) {
    thread_ = std::thread([this] { Accept(); });
  }
  ~ScriptedUpstream() {
    done_.store(true);
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    for (std::thread& t : connections_) t.join();
  }
  uint16_t port() const { return port_; }

 private:
  void Accept() {
    for (;;) {
      int conn = accept(fd_, nullptr, nullptr);
      if (conn < 0 || done_.load()) {
        if (conn >= 0) close(conn);
        return;
      }
      connections_.emplace_back([this, conn] {
        Serve(conn);
        close(conn);
      });
    }
  }
  void Serve(int conn) {
    std::string req = ReadRequest(conn);
    size_t at = req.find("mode:");
    std::string mode = at == std::string::npos ? "" : req.substr(at + 5, req.find_first_of("\"\\", at) - at - 5);
    const bool messages = req.substr(0, req.find('\r')).find("/messages") != std::string::npos;
    if (messages && mode == "ok") {
      SendAll(conn, Answer(200, "application/json", kMessage));
    } else if (mode == "ok") {
      SendAll(conn, Answer(200, "application/json", kChat));
    } else if (mode == "fail") {
      SendAll(conn, Answer(500, "application/json", R"({"error":{"message":"boom","type":"server_error"}})"));
    } else if (mode == "retry" && retried_.fetch_add(1) == 0) {
      SendAll(conn, Answer(503, "application/json", R"({"error":{"message":"busy"}})"));
    } else if (mode == "retry") {
      SendAll(conn, Answer(200, "application/json", kChat));
    } else if (mode == "slow") {
      bool up = SendAll(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
      for (int i = 0; up && i < 250 && !done_.load(); ++i) {
        up = SendAll(conn, kChunk);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }  // dies: nothing
  }

  uint16_t port_ = 0;
  int fd_;
  std::atomic<bool> done_{false};
  std::atomic<int> retried_{0};
  std::thread thread_;
  std::vector<std::thread> connections_;  // the accepting thread's alone
};

// A call through the proxy: its answer's status line's code (0: none).
// hang_up_early: the client closes once the first event has come.
int Call(uint16_t port, const std::string& path, const std::string& body, bool hang_up_early = false) {
  int fd = Connect(port);
  REQUIRE(fd >= 0);
  std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                    "x-api-key: k\r\nanthropic-version: 2023-06-01\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  REQUIRE(SendAll(fd, req));
  std::string in;
  char buf[4096];
  for (;;) {
    if (hang_up_early && in.find("data:") != std::string::npos) break;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return in.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(in.substr(9, 3)) : 0;
}

// RunProxy on a free port in front of upstream, until the scope ends.
class RunningProxy {
 public:
  RunningProxy(const std::string& store, uint16_t upstream, const std::string& api) {
    uint16_t port = 0;
    close(Listen(port));
    config_.env = &env_;
    config_.port = port;
    config_.store_path = store;
    config_.upstreams = {"http://127.0.0.1:" + std::to_string(upstream)};
    config_.upstream_api = api;
    config_.open = true;
    config_.threads = 1;
    config_.health_interval = 0;
    config_.keepalive_interval = 0;
    config_.upstream_retries = 1;
    config_.drain_timeout = 10;
    thread_ = std::thread([this] { status_ = forge::proxy::RunProxy(config_); });
    for (int i = 0; i < 500; ++i) {  // up to 10 s to listen
      int fd = Connect(port);
      if (fd >= 0) {
        close(fd);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL("forge-proxy did not listen");
  }
  ~RunningProxy() { (void)Stop(); }  // a destructor cannot report: tests that care call Stop()
  uint16_t port() const { return config_.port; }
  // Stops it (its calls drained and recorded); its status.
  forge::Status Stop() {
    if (thread_.joinable()) {
      env_.stop().Request();
      thread_.join();
    }
    return status_;
  }

 private:
  forge::testing::FakeEnv env_;
  forge::proxy::ProxyConfig config_;
  forge::Status status_;
  std::thread thread_;
};

// The records of each rollout, as "status status ..." in the order committed.
std::map<std::string, std::string> Records(const std::string& store_path, const std::vector<std::string>& rollouts) {
  auto store = forge::testing::OpenOrDie(store_path);
  std::map<std::string, std::string> out;
  for (const std::string& rollout : rollouts) {
    auto calls = store->calls().CallsOfRollout(rollout);
    REQUIRE_MESSAGE(calls.ok(), calls.status().message());
    std::string statuses;
    for (const auto& call : *calls) statuses += (statuses.empty() ? "" : " ") + std::to_string(call.http_status);
    out[rollout] = statuses;
  }
  return out;
}

std::string Chat(const std::string& mode, bool stream = false) {
  return std::string(R"({"model":"m","stream":)") + (stream ? "true" : "false") +
         R"(,"messages":[{"role":"user","content":"mode:)" + mode + R"("}]})";
}

TEST_CASE("commit: each way a call ends commits its record once (and each retried attempt once)") {
  forge::testing::TempDir dir;
  const std::string store = dir.File("forge.db");
  forge::testing::OpenOrDie(store);  // made before the proxy opens it
  ScriptedUpstream upstream;
  {
    RunningProxy proxy(store, upstream.port(), "openai");
    CHECK(Call(proxy.port(), "/r/ok/v1/chat/completions", Chat("ok")) == 200);
    CHECK(Call(proxy.port(), "/r/fail/v1/chat/completions", Chat("fail")) == 500);
    CHECK(Call(proxy.port(), "/r/dies/v1/chat/completions", Chat("dies")) == 502);
    CHECK(Call(proxy.port(), "/r/retry/v1/chat/completions", Chat("retry")) == 200);
    CHECK(Call(proxy.port(), "/r/gone/v1/chat/completions", Chat("slow", true), true) == 200);
    // Translated (the Messages client on an OpenAI upstream): the same path.
    CHECK(Call(proxy.port(), "/r/translated/v1/messages", R"({"model":"m","max_tokens":8,)"
                                                          R"("messages":[{"role":"user","content":"mode:ok"}]})") == 200);
    REQUIRE_MESSAGE(proxy.Stop().ok(), proxy.Stop().message());
  }
  auto records = Records(store, {"ok", "fail", "dies", "retry", "gone", "translated"});
  CHECK(records["ok"] == "200");
  CHECK(records["fail"] == "500");
  CHECK(records["dies"] == "502 502");  // the attempt retried, then the call
  CHECK(records["retry"] == "503 200");
  CHECK(records["gone"] == "499");  // the client hung up mid-stream
  CHECK(records["translated"] == "200");
}

TEST_CASE("commit: the Anthropic pass-through commits once, as every other upstream") {
  forge::testing::TempDir dir;
  const std::string store = dir.File("forge.db");
  forge::testing::OpenOrDie(store);
  ScriptedUpstream upstream;
  {
    RunningProxy proxy(store, upstream.port(), "anthropic");
    const std::string message = R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"mode:)";
    CHECK(Call(proxy.port(), "/r/a-ok/v1/messages", message + R"(ok"}]})") == 200);
    CHECK(Call(proxy.port(), "/r/a-fail/v1/messages", message + R"(fail"}]})") == 500);
    CHECK(Call(proxy.port(), "/r/a-retry/v1/messages", message + R"(retry"}]})") == 200);
    // Refused before any upstream: answered, and recorded nowhere.
    CHECK(Call(proxy.port(), "/r/a-chat/v1/chat/completions", Chat("ok")) == 400);
    REQUIRE_MESSAGE(proxy.Stop().ok(), proxy.Stop().message());
  }
  auto records = Records(store, {"a-ok", "a-fail", "a-retry", "a-chat"});
  CHECK(records["a-ok"] == "200");
  CHECK(records["a-fail"] == "500");
  CHECK(records["a-retry"] == "503 200");
  CHECK(records["a-chat"] == "");
}

}  // namespace proxy_commit_test
