#include "proxy/http_write.h"

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

RequestHead::RequestHead(std::string_view target) {
  text_.reserve(256);
  text_.append("POST ").append(target).append(" HTTP/1.1\r\n");
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

}  // namespace forge::proxy
