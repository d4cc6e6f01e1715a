#include "proxy/upstream_answer_asio.h"

#include <algorithm>

#include "base/json_field.h"
#include "proxy/asio.h"
#include "proxy/http_read_asio.h"
#include "proxy/ready_io_asio.h"
#include "proxy/upstream_faults.h"

namespace forge::proxy {

Headers RetryHeaders(const http::fields& upstream) {
  Headers out;
  for (const auto& field : upstream) {
    beast::string_view name = field.name_string();
    if (!IsRetryHeader(std::string_view(name.data(), name.size()))) continue;
    beast::string_view value = field.value();
    out.emplace_back(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
  }
  return out;
}

void UpstreamAnswer::Reset() {
  outstanding.reset();
  parser.reset();
  conn.reset();
  upstream = nullptr;
  error.clear();
  timed_out = client_gone = false;
}

Task<bool> ReadWholeAnswer(UpstreamAnswer& answer, UpstreamPool& pool, std::string& out) {
  beast::error_code ec = co_await AppendWholeUpstreamBody(answer, out);
  if (ec == ClientHungUp()) {
    answer.client_gone = true;
    answer.error = kClientHungUpMessage;
    co_return false;
  }
  if (ec) {
    answer.timed_out = ec == beast::error::timeout;
    answer.error = "upstream " + answer.upstream->url + " failed mid-response: " + ec.message();
    co_return false;
  }
  if (answer.parser->get().keep_alive()) pool.Release(*answer.upstream, std::move(answer.conn));
  co_return true;
}

std::string UpstreamErrorMessage(int status, const std::string& body) {
  Json parsed = Json::parse(body, nullptr, false);
  std::string detail;
  if (parsed.is_object() && parsed.contains("error")) {
    const Json& e = parsed["error"];
    detail = e.is_object() ? JsonText(e, "message", e.dump()) : (e.is_string() ? e.get<std::string>() : e.dump());
  } else if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    detail = parsed["message"];
  } else {
    detail = body.substr(0, 512);
  }
  return "upstream answered " + std::to_string(status) + ": " + detail;
}

Task<beast::error_code> AppendWholeUpstreamBody(UpstreamAnswer& answer, std::string& out) {
  auto& parser = *answer.parser;
  // A length is only the upstream's word: room for at most 1 MiB at a time.
  constexpr uint64_t kPiece = 16384, kMostRoom = 1 << 20;
  // out holds `have` bytes of body; past them, room already zeroed by an
  // earlier resize is read into again, so each byte is zero-filled once (a
  // resize per read zeroed the whole rest every time: for a 350 KB answer
  // of prompt ids, 16 MB of memset a call).
  size_t have = out.size();
  beast::error_code ec;
  while (!parser.is_done() && !ec) {
    uint64_t room = kPiece;
    if (auto rest = parser.content_length_remaining(); rest && *rest > 0) room = std::min(*rest, kMostRoom);
    if (out.size() < have + room) out.resize(have + room);
    parser.get().body().data = out.data() + have;
    parser.get().body().size = out.size() - have;
    co_await ReadHttp(answer.conn->stream, answer.conn->buffer, parser, ReadUntil::kSome, ec);
    if (ec == http::error::need_buffer) ec = {};
    have = out.size() - parser.get().body().size;
  }
  parser.get().body().data = nullptr;
  parser.get().body().size = 0;
  out.resize(have);
  co_return ec;
}

std::string MidStreamError(const beast::error_code& ec, const std::string& upstream_url, bool& client_gone,
                           bool& upstream_broke) {
  if (ec == ClientHungUp()) {
    client_gone = true;  // recorded as the client's doing
    return kClientHungUpMessage;
  }
  upstream_broke = true;
  return "upstream " + upstream_url +
         (ec == beast::error::timeout ? " stalled mid-stream: " : " broke off the stream: ") + ec.message();
}

}  // namespace forge::proxy
