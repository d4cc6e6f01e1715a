// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// The byte stream to one upstream: plain TCP, or TLS over TCP for an https://
// upstream (a hosted API). Beast's HTTP reads and writes work on either; the
// timeouts live on the TCP layer, so they hold under TLS as well. The call
// path reads and writes through ReadSome and WriteAll, which on plain TCP
// skip asio's asynchronous operations when the socket is ready (ready_io_asio.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "proxy/asio.h"
#include "proxy/ready_io_asio.h"

#include <boost/asio/ssl.hpp>

namespace forge::proxy {

namespace ssl = asio::ssl;

class UpstreamStream {
 public:
  using executor_type = beast::tcp_stream::executor_type;

  explicit UpstreamStream(asio::any_io_executor ex) : tcp_(ex) {}

  executor_type get_executor() noexcept { return tcp_.get_executor(); }
  beast::tcp_stream& tcp() { return tcp_; }
  bool tls() const { return tls_.has_value(); }

  template <typename Duration>
  void expires_after(Duration d) { tcp_.expires_after(d); }
  void expires_never() { tcp_.expires_never(); }

  // The longest ReadSome and WriteAll wait for the upstream, in seconds (0: no limit).
  void set_timeout(double seconds) { timeout_ = seconds; }
  // The client the upstream answers while it does: ReadSome's wait ends with
  // ClientHungUp() once that client hangs up. Null: none, as for a
  // connection back in the pool.
  void watch_client(const tcp::socket* client) { watched_client_ = client; }

  // Reads some bytes; beast::error::timeout after the timeout without any.
  Task<size_t> ReadSome(asio::mutable_buffer buffer, beast::error_code& ec);

  // Writes every byte of buffers.
  template <typename ConstBuffers>
  Task<void> WriteAll(const ConstBuffers& buffers, beast::error_code& ec) {
    if (!tls_) co_return co_await WriteAllReady(tcp_.socket(), buffers, timeout_, ec);
    ExpireAfterTimeout();
    co_await asio::async_write(*tls_, buffers, Into(ec));
    tcp_.expires_never();
  }

  // Starts TLS on the connected TCP stream: SNI and certificate checks
  // against host (a name, or an IP address the certificate must list).
  Task<void> Handshake(ssl::context& context, const std::string& host, beast::error_code& ec);

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    if (tls_) return tls_->async_read_some(buffers, std::forward<Token>(token));
    return tcp_.async_read_some(buffers, std::forward<Token>(token));
  }
  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    if (tls_) return tls_->async_write_some(buffers, std::forward<Token>(token));
    return tcp_.async_write_some(buffers, std::forward<Token>(token));
  }

 private:
  void ExpireAfterTimeout();

  beast::tcp_stream tcp_;
  std::optional<ssl::stream<beast::tcp_stream&>> tls_;
  double timeout_ = 0;
  const tcp::socket* watched_client_ = nullptr;
};

// A client TLS context that checks certificates against the system's CAs,
// plus ca_file (PEM) when given.
Result<std::shared_ptr<ssl::context>> MakeTlsContext(const std::string& ca_file);

}  // namespace forge::proxy
