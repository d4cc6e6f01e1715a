#include "sandbox/k8s/websocket.h"

#include <poll.h>

#include <cstring>

#include <openssl/sha.h>

#include "base/base64.h"
#include "base/hash.h"
#include "sandbox/k8s/api_client.h"

namespace forge::sandbox::k8s {
namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = s.find_first_not_of(" \t");
  return start == std::string::npos ? "" : s.substr(start);
}

Status StatusForHttp(long code, const std::string& body, const std::string& path) {
  HttpResponse response{code, body};
  Status status = ApiError(response, "exec upgrade " + path.substr(0, path.find('?')));
  // 400 here means the container is not there to exec into (pod ended,
  // evicted, past its deadline): the sandbox is gone, an infrastructure error.
  if (code == 400) return Status::Unavailable(status.message());
  // Throttled (APF) or a server error before anything ran: worth another try.
  if (code == 429 || code >= 500) return Status::Busy(status.message());
  return status;
}

}  // namespace

std::string WebSocket::AcceptFor(const std::string& key) {
  std::string input = key + std::string(kGuid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  return Base64Encode({reinterpret_cast<const char*>(digest), sizeof digest});
}

std::string WebSocket::EncodeFrame(int opcode, std::string_view payload, const uint8_t mask[4]) {
  std::string frame;
  frame += static_cast<char>(0x80 | opcode);  // FIN: forge never fragments what it sends
  size_t n = payload.size();
  if (n < 126) {
    frame += static_cast<char>(0x80 | n);
  } else if (n <= 0xffff) {
    frame += static_cast<char>(0x80 | 126);
    frame += static_cast<char>(n >> 8);
    frame += static_cast<char>(n & 0xff);
  } else {
    frame += static_cast<char>(0x80 | 127);
    for (int shift = 56; shift >= 0; shift -= 8) frame += static_cast<char>((n >> shift) & 0xff);
  }
  frame.append(reinterpret_cast<const char*>(mask), 4);
  size_t start = frame.size();
  frame.append(payload);
  for (size_t i = 0; i < n; ++i) frame[start + i] ^= static_cast<char>(mask[i % 4]);
  return frame;
}

Result<std::unique_ptr<WebSocket>> WebSocket::Connect(ApiClient& client, const std::string& path,
                                                      const std::vector<std::string>& protocols,
                                                      Deadline deadline) {
  client.limiter().Acquire();
  std::unique_ptr<WebSocket> ws(new WebSocket());
  ws->curl_ = curl_easy_init();
  const std::string& server = client.cluster().server;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(ws->curl_, CURLOPT_URL, server.c_str());
  curl_easy_setopt(ws->curl_, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(ws->curl_, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(ws->curl_, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(ws->curl_, CURLOPT_NOSIGNAL, 1L);
  client.ConfigureTls(ws->curl_);
  CURLcode rc = curl_easy_perform(ws->curl_);
  if (rc != CURLE_OK) {
    return Status::Busy("exec: connecting to " + server + ": " +
                               std::string(error[0] ? error : curl_easy_strerror(rc)));
  }
  curl_easy_getinfo(ws->curl_, CURLINFO_ACTIVESOCKET, &ws->socket_);

  // Host header and path prefix come from the server URL.
  std::string rest = server.substr(server.find("://") + 3);
  std::string host = rest.substr(0, rest.find('/'));
  std::string prefix = rest.find('/') == std::string::npos ? "" : rest.substr(rest.find('/'));

  uint8_t nonce[16];
  RandomBytes(nonce, sizeof nonce);
  std::string key = Base64Encode({reinterpret_cast<const char*>(nonce), sizeof nonce});
  std::string offered;
  for (const std::string& p : protocols) offered += (offered.empty() ? "" : ", ") + p;
  std::string request = "GET " + prefix + path + " HTTP/1.1\r\n" + "Host: " + host + "\r\n" +
                        "Upgrade: websocket\r\n" + "Connection: Upgrade\r\n" +
                        "Sec-WebSocket-Key: " + key + "\r\n" + "Sec-WebSocket-Version: 13\r\n" +
                        "Sec-WebSocket-Protocol: " + offered + "\r\n";
  std::string token = client.Token();
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n";
  ws->outbuf_ = std::move(request);
  FORGE_RETURN_IF_ERROR(ws->Flush(deadline));

  // Read the response head; what follows it already belongs to the frames.
  while (ws->inbuf_.find("\r\n\r\n") == std::string::npos) {
    if (ws->inbuf_.size() > 64 * 1024) return Status::Protocol("exec: response head too large");
    Result<bool> alive = ws->Pump(true);
    if (!alive.ok()) return alive.status();
    if (!*alive) {
      return Status::Unavailable("exec: " + server + " closed the connection during the upgrade");
    }
    if (ws->inbuf_.find("\r\n\r\n") != std::string::npos) break;
    FORGE_RETURN_IF_ERROR(ws->Wait(false, deadline));
  }
  size_t end = ws->inbuf_.find("\r\n\r\n");
  std::string head = ws->inbuf_.substr(0, end);
  ws->inbuf_.erase(0, end + 4);

  long code = 0;
  if (std::sscanf(head.c_str(), "HTTP/%*s %ld", &code) != 1) {
    return Status::Protocol("exec: not an HTTP response: " + head.substr(0, 80));
  }
  std::string accept, upgrade;
  size_t content_length = 0;
  size_t pos = head.find("\r\n");
  while (pos != std::string::npos) {
    size_t next = head.find("\r\n", pos + 2);
    std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos
                                                                      : next - pos - 2);
    pos = next;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = Lower(line.substr(0, colon));
    std::string value = Trim(line.substr(colon + 1));
    if (name == "sec-websocket-accept") accept = value;
    else if (name == "sec-websocket-protocol") ws->protocol_ = value;
    else if (name == "upgrade") upgrade = Lower(value);
    else if (name == "content-length") content_length = std::strtoul(value.c_str(), nullptr, 10);
  }
  if (code != 101) {
    // Collect the (short) error body for the message.
    while (ws->inbuf_.size() < content_length && std::chrono::steady_clock::now() < deadline) {
      Result<bool> alive = ws->Pump(true);
      if (!alive.ok() || !*alive) break;
      if (ws->inbuf_.size() >= content_length) break;
      if (!ws->Wait(false, deadline).ok()) break;
    }
    return StatusForHttp(code, ws->inbuf_.substr(0, content_length), path);
  }
  if (upgrade != "websocket") return Status::Protocol("exec: 101 without Upgrade: websocket");
  if (accept != AcceptFor(key)) {
    return Status::Protocol("exec: Sec-WebSocket-Accept does not match the key");
  }
  bool known = false;
  for (const std::string& p : protocols) known = known || p == ws->protocol_;
  if (!known) {
    return Status::Protocol("exec: server chose subprotocol '" + ws->protocol_ +
                            "', which was not offered");
  }
  return ws;
}

WebSocket::~WebSocket() {
  if (curl_) curl_easy_cleanup(curl_);
}

void WebSocket::QueueBinary(std::string_view payload) {
  uint8_t mask[4];
  RandomBytes(mask, 4);
  outbuf_ += EncodeFrame(2, payload, mask);
}

void WebSocket::QueueClose(uint16_t code) {
  uint8_t mask[4];
  RandomBytes(mask, 4);
  std::string payload{static_cast<char>(code >> 8), static_cast<char>(code & 0xff)};
  outbuf_ += EncodeFrame(8, payload, mask);
}

Result<bool> WebSocket::Pump(bool want_read) {
  while (!outbuf_.empty() && !peer_gone_) {
    size_t sent = 0;
    CURLcode rc = curl_easy_send(curl_, outbuf_.data(), outbuf_.size(), &sent);
    if (rc == CURLE_AGAIN) break;
    if (rc != CURLE_OK) {
      peer_gone_ = true;
      break;
    }
    outbuf_.erase(0, sent);
  }
  if (!want_read) return !peer_gone_;
  char buffer[64 * 1024];
  while (!peer_gone_) {
    size_t got = 0;
    CURLcode rc = curl_easy_recv(curl_, buffer, sizeof buffer, &got);
    if (rc == CURLE_AGAIN) break;
    if (rc != CURLE_OK || got == 0) {
      peer_gone_ = true;
      break;
    }
    inbuf_.append(buffer, got);
    if (inbuf_.size() > (8u << 20)) break;  // let the caller consume first
  }
  return !peer_gone_;
}

Status WebSocket::Wait(bool want_write, Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return Status::Busy("deadline passed");
  pollfd fd{static_cast<int>(socket_), static_cast<short>(POLLIN | (want_write ? POLLOUT : 0)), 0};
  int wait = static_cast<int>(std::min<int64_t>(left.count(), 1000));
  if (poll(&fd, 1, wait) < 0 && errno != EINTR) {
    return Status::IoError(std::string("exec: poll: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Status WebSocket::Flush(Deadline deadline) {
  while (!outbuf_.empty()) {
    Result<bool> alive = Pump(false);
    if (!alive.ok()) return alive.status();
    if (!*alive) return Status::Unavailable("exec: connection closed while sending");
    if (outbuf_.empty()) break;
    Status waited = Wait(true, deadline);
    if (!waited.ok()) return Status::Unavailable("exec: timed out sending");
  }
  return Status::Ok();
}

Result<std::optional<WsMessage>> WebSocket::ParseFrame() {
  while (true) {
    if (inbuf_.size() < 2) return std::optional<WsMessage>();
    auto byte = [&](size_t i) { return static_cast<uint8_t>(inbuf_[i]); };
    bool fin = byte(0) & 0x80;
    int opcode = byte(0) & 0x0f;
    if (byte(0) & 0x70) return Status::Protocol("exec: frame with reserved bits set");
    bool masked = byte(1) & 0x80;
    uint64_t length = byte(1) & 0x7f;
    size_t header = 2;
    if (length == 126) {
      if (inbuf_.size() < 4) return std::optional<WsMessage>();
      length = (uint64_t{byte(2)} << 8) | byte(3);
      header = 4;
    } else if (length == 127) {
      if (inbuf_.size() < 10) return std::optional<WsMessage>();
      length = 0;
      for (int i = 0; i < 8; ++i) length = (length << 8) | byte(2 + i);
      header = 10;
    }
    if (masked) return Status::Protocol("exec: server sent a masked frame (RFC 6455 5.1)");
    if (length > (64u << 20)) return Status::Protocol("exec: frame larger than 64 MiB");
    if (inbuf_.size() < header + length) return std::optional<WsMessage>();
    std::string payload = inbuf_.substr(header, length);
    inbuf_.erase(0, header + length);

    switch (opcode) {
      case 0x9: {  // ping: answer with the same payload
        uint8_t mask[4];
        RandomBytes(mask, 4);
        outbuf_ += EncodeFrame(0xA, payload, mask);
        continue;
      }
      case 0xA:  // pong
        continue;
      case 0x8:
        return std::optional<WsMessage>(WsMessage{WsMessage::kClose, payload});
      case 0x0:
        if (!fragment_opcode_) return Status::Protocol("exec: continuation without a start");
        fragments_ += payload;
        break;
      case 0x1:
      case 0x2:
        if (fragment_opcode_) return Status::Protocol("exec: new message inside a fragmented one");
        fragment_opcode_ = opcode;
        fragments_ = std::move(payload);
        break;
      default:
        return Status::Protocol("exec: unknown WebSocket opcode " + std::to_string(opcode));
    }
    if (fin) {
      WsMessage message{fragment_opcode_ == 1 ? WsMessage::kText : WsMessage::kBinary,
                        std::move(fragments_)};
      fragments_.clear();
      fragment_opcode_ = 0;
      return std::optional<WsMessage>(std::move(message));
    }
  }
}

Result<std::optional<WsMessage>> WebSocket::Next(Deadline deadline) {
  while (true) {
    Result<std::optional<WsMessage>> frame = ParseFrame();
    if (!frame.ok() || frame->has_value()) return frame;
    if (peer_gone_) return std::optional<WsMessage>(WsMessage{WsMessage::kClose, ""});
    Result<bool> alive = Pump(true);
    if (!alive.ok()) return alive.status();
    frame = ParseFrame();
    if (!frame.ok() || frame->has_value()) return frame;
    if (!*alive) return std::optional<WsMessage>(WsMessage{WsMessage::kClose, ""});
    if (!Wait(!outbuf_.empty(), deadline).ok()) return std::optional<WsMessage>();
  }
}

}  // namespace forge::sandbox::k8s
