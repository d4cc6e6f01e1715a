#include "proxy/http_write_asio.h"

#include "proxy/asio.h"

namespace forge::proxy {
namespace {

std::string_view VersionText(unsigned version) { return version == 10 ? "HTTP/1.0" : "HTTP/1.1"; }

void AppendFields(const http::fields& fields, std::string& out) {
  for (const auto& field : fields) {
    out.append(field.name_string().data(), field.name_string().size());
    out += ": ";
    out.append(field.value().data(), field.value().size());
    out += "\r\n";
  }
  out += "\r\n";
}

}  // namespace

std::string HeaderText(const http::response_header<>& header) {
  std::string out;
  out.reserve(256);
  out += VersionText(header.version());
  out += ' ';
  out += std::to_string(header.result_int());
  out += ' ';
  auto reason = header.reason();
  out.append(reason.data(), reason.size());
  out += "\r\n";
  AppendFields(header, out);
  return out;
}

RequestHead::RequestHead(std::string_view target, std::string_view method) {
  text_.reserve(256);
  text_.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
}

RequestHead& RequestHead::Set(std::string_view name, std::string_view value) {
  text_.append(name).append(": ").append(value).append("\r\n");
  return *this;
}

std::string RequestHead::Text(uint64_t content_length) && {
  text_.append("Content-Length: ").append(std::to_string(content_length)).append("\r\n\r\n");
  return std::move(text_);
}

ResponseHead::ResponseHead(http::status status, unsigned version) : version_(version) {
  text_.reserve(256);
  auto reason = http::obsolete_reason(status);
  text_.append(VersionText(version)).append(" ").append(std::to_string(static_cast<unsigned>(status)));
  text_.append(" ").append(reason.data(), reason.size()).append("\r\n");
}

ResponseHead& ResponseHead::Set(std::string_view name, std::string_view value) {
  text_.append(name).append(": ").append(value).append("\r\n");
  return *this;
}

std::string ResponseHead::Text(bool keep_alive, uint64_t content_length) && {
  if (version_ >= 11 && !keep_alive) text_.append("Connection: close\r\n");
  if (version_ < 11 && keep_alive) text_.append("Connection: keep-alive\r\n");
  text_.append("Content-Length: ").append(std::to_string(content_length)).append("\r\n\r\n");
  return std::move(text_);
}

Task<bool> SendResponse(tcp::socket& client, const Request& req, bool may_keep_alive, http::status status,
                        std::string body, std::string_view content_type, Headers headers) {
  ResponseHead head(status, req.version());
  head.Set("Server", "forge-proxy").Set("Content-Type", content_type);
  for (const auto& [name, value] : headers) head.Set(name, value);
  bool keep_alive = req.keep_alive() && may_keep_alive;
  std::string header = std::move(head).Text(keep_alive, body.size());
  beast::error_code ec;
  co_await WriteMessage(client, header, body, ec);
  co_return !ec && keep_alive;
}

}  // namespace forge::proxy
