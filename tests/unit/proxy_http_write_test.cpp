// HeaderText: the header the proxy writes itself must be the one Beast's
// serializer would write for the same message.
#include <doctest/doctest.h>

#include <sstream>

#include "proxy/http_write_asio.h"

namespace http = forge::proxy::http;
using forge::proxy::HeaderText;

namespace {

template <bool isRequest>
std::string BeastHeader(const http::message<isRequest, http::empty_body>& message) {
  std::ostringstream out;
  out << message.base();
  return out.str();
}

}  // namespace

TEST_CASE("RequestHead writes the upstream request header Beast would") {
  for (bool with_key : {false, true}) {
    http::request<http::empty_body> req{http::verb::post, "/prefix/v1/chat/completions", 11};
    req.set(http::field::host, "127.0.0.1:8000");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    req.set("anthropic-version", "2023-06-01");
    if (with_key) req.set(http::field::authorization, "Bearer sk-test");
    req.keep_alive(true);
    req.content_length(204800);
    forge::proxy::RequestHead head("/prefix/v1/chat/completions");
    head.Set("Host", "127.0.0.1:8000").Set("Content-Type", "application/json").Set("Accept", "text/event-stream");
    head.Set("anthropic-version", "2023-06-01");
    if (with_key) head.Set("Authorization", "Bearer sk-test");
    CHECK(std::move(head).Text(204800) == BeastHeader(req));
  }
}

TEST_CASE("ResponseHead writes the response header Beast would, for each version and keep-alive") {
  for (unsigned version : {10u, 11u}) {
    for (bool keep : {false, true}) {
      for (auto status : {http::status::ok, http::status::too_many_requests, http::status::bad_gateway}) {
        CAPTURE(version);
        CAPTURE(keep);
        http::response<http::empty_body> res{status, version};
        res.set(http::field::server, "forge-proxy");
        res.set(http::field::content_type, "application/json");
        res.set("Retry-After", "2");
        res.keep_alive(keep);
        res.content_length(12345);
        forge::proxy::ResponseHead head(status, version);
        head.Set("Server", "forge-proxy").Set("Content-Type", "application/json").Set("Retry-After", "2");
        CHECK(std::move(head).Text(keep, 12345) == BeastHeader(res));
      }
    }
  }
}

TEST_CASE("HeaderText writes response headers as Beast does: status, reason, keep-alive, chunked") {
  http::response<http::empty_body> closing{http::status::not_found, 11};
  closing.set(http::field::server, "forge-proxy");
  closing.keep_alive(false);
  closing.content_length(42);
  CHECK(HeaderText(closing.base()) == BeastHeader(closing));
  CHECK(HeaderText(closing.base()).find("Connection: close\r\n") != std::string::npos);

  http::response<http::empty_body> old_client{http::status::too_many_requests, 10};
  old_client.set("Retry-After", "2");
  old_client.keep_alive(true);
  old_client.content_length(0);
  CHECK(HeaderText(old_client.base()) == BeastHeader(old_client));
  CHECK(HeaderText(old_client.base()).rfind("HTTP/1.0 429 Too Many Requests\r\n", 0) == 0);

  http::response<http::empty_body> stream{http::status::ok, 11};
  stream.set(http::field::content_type, "text/event-stream");
  stream.chunked(true);
  CHECK(HeaderText(stream.base()) == BeastHeader(stream));
  CHECK(HeaderText(stream.base()).find("Transfer-Encoding: chunked\r\n") != std::string::npos);
}
