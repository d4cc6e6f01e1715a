// A WebSocket client (RFC 6455) on a libcurl connect-only connection: this
// libcurl has no WebSocket support, so forge does the upgrade handshake and
// the framing itself over curl_easy_send/recv, keeping curl's TLS and auth.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <curl/curl.h>

#include "base/status.h"

namespace forge::sandbox::k8s {

class ApiClient;

struct WsMessage {
  enum Kind { kText = 1, kBinary = 2, kClose = 8 };
  Kind kind = kBinary;
  std::string data;
};

class WebSocket {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // Opens path (with query) on the client's API server, offering the given
  // subprotocols in order of preference. Non-101 answers become a Status
  // with the HTTP code's meaning (404: NotFound, 429/5xx: Unavailable, ...).
  static Result<std::unique_ptr<WebSocket>> Connect(ApiClient& client, const std::string& path,
                                                    const std::vector<std::string>& protocols,
                                                    Deadline deadline);
  ~WebSocket();

  // The subprotocol the server chose.
  const std::string& protocol() const { return protocol_; }

  // Frames a binary message (masked, as a client must) for sending.
  void QueueBinary(std::string_view payload);
  void QueueClose(uint16_t code);

  // Sends what is queued while reading, and returns the next data or close
  // message; nullopt when the deadline passes first. A connection that ends
  // without a close frame comes back as a close message with empty data.
  Result<std::optional<WsMessage>> Next(Deadline deadline);

  // Sends what is queued, up to the deadline.
  Status Flush(Deadline deadline);

  // Builds the frame a client sends; exposed for tests.
  static std::string EncodeFrame(int opcode, std::string_view payload, const uint8_t mask[4]);
  // Sec-WebSocket-Accept for a key.
  static std::string AcceptFor(const std::string& key);

 private:
  WebSocket() = default;
  // Moves bytes both ways without blocking; false once the peer has gone.
  Result<bool> Pump(bool want_read);
  Status Wait(bool want_write, Deadline deadline);
  // Takes one complete frame out of inbuf_, if there is one.
  Result<std::optional<WsMessage>> ParseFrame();

  CURL* curl_ = nullptr;
  curl_socket_t socket_ = CURL_SOCKET_BAD;
  std::string protocol_;
  std::string outbuf_;
  std::string inbuf_;
  std::string fragments_;  // a fragmented message being put together
  int fragment_opcode_ = 0;
  bool peer_gone_ = false;
};

}  // namespace forge::sandbox::k8s
