#include "proxy/upstream_stream_asio.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "proxy/asio.h"

namespace forge::proxy {

void UpstreamStream::ExpireAfterTimeout() {
  if (timeout_ > 0) {
    tcp_.expires_after(SteadySeconds(timeout_));
  } else {
    tcp_.expires_never();
  }
}

Task<size_t> UpstreamStream::ReadSome(asio::mutable_buffer buffer, beast::error_code& ec) {
  if (!tls_) co_return co_await ReadSomeReady(tcp_.socket(), buffer, timeout_, ec, watched_client_);
  ExpireAfterTimeout();
  std::optional<SocketWait> watch;  // (the timeout is the TCP stream's own timer)
  if (watched_client_) watch.emplace(tcp_.socket(), std::chrono::steady_clock::time_point::max(), watched_client_);
  size_t n = co_await tls_->async_read_some(buffer, Into(ec));
  tcp_.expires_never();
  if (watch && watch->client_gone && ec) ec = ClientHungUp();
  co_return n;
}

Task<void> UpstreamStream::Handshake(ssl::context& context, const std::string& host, beast::error_code& ec) {
  tls_.emplace(tcp_, context);
  // SNI takes names only; an IP address is checked against the certificate's IP entries.
  beast::error_code not_an_address;
  asio::ip::make_address(host, not_an_address);
  if (not_an_address && !SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str())) {
    ec = beast::error_code(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category());
    co_return;
  }
  tls_->set_verify_mode(ssl::verify_peer);
  tls_->set_verify_callback(ssl::host_name_verification(host));
  co_await tls_->async_handshake(ssl::stream_base::client, Into(ec));
}

Result<std::shared_ptr<ssl::context>> MakeTlsContext(const std::string& ca_file) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  beast::error_code ec;
  context->set_default_verify_paths(ec);
  if (ec) return Status::BadConfig("cannot load the system's CA certificates: " + ec.message());
  if (!ca_file.empty()) {
    context->load_verify_file(ca_file, ec);
    if (ec) return Status::BadConfig("--upstream-ca " + ca_file + ": " + ec.message());
  }
  return context;
}

}  // namespace forge::proxy
