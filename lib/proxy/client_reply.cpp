#include "proxy/client_reply_asio.h"

#include "proxy/asio.h"
#include "proxy/http_write_asio.h"
#include "proxy/upstream_faults.h"

namespace forge::proxy {

ClientReply::ClientReply(tcp::socket& socket, const Request& req, const ClientUrl& url, const ClientFormat& format,
                         const std::atomic<bool>& stopping, const std::vector<std::string>& urls, Metrics& metrics)
    : socket_(socket),
      req_(req),
      format_(format),
      stopping_(stopping),
      urls_(urls),
      metrics_(metrics),
      stream_(std::make_shared<ClientStream>()) {
  stream_->socket = &socket;
  stream_->version = req.version();
  stream_->content_type = url.stream_content_type;
}

Task<bool> ClientReply::Refuse(Refusal refusal) {
  if (refusal.status < 500) metrics_.client_errors.fetch_add(1);
  co_return co_await SendResponse(socket_, req_, !stopping_.load(), static_cast<http::status>(refusal.status),
                                  format_.ErrorBody(refusal.status, WithoutAddresses(refusal.message, urls_)).dump(),
                                  "application/json", std::move(refusal.headers));
}

// (Values are named before they go into a co_await: g++12 destroys some
// temporaries there twice.)
Task<bool> ClientReply::Send(Outcome& outcome, const Status& committed) {
  using Reply = Outcome::Reply;
  ClientStream& cs = *stream_;
  co_await StopKeepAlive(cs);
  if (outcome.reply == Reply::kNothing) co_return false;
  if (!committed.ok() && (outcome.reply == Reply::kWhole || outcome.reply == Reply::kStreamEnd)) {
    // (A failed call's record is best effort: the client is told of its failure either way.)
    Refusal not_recorded{500, "the call could not be recorded: " + committed.message(), {}};
    if (!cs.started()) co_return co_await Refuse(std::move(not_recorded));
    std::unique_ptr<StreamTranslator> stream = outcome.stream ? std::move(outcome.stream) : format_.NewStream();
    co_await WriteSseBytes(cs, stream->OnError(not_recorded.message), true);
    co_return false;
  }
  if (outcome.reply == Reply::kError && !cs.started()) {
    Refusal failed{outcome.status, std::move(outcome.error), std::move(outcome.headers)};
    co_return co_await Refuse(std::move(failed));
  }
  if (outcome.reply == Reply::kError) {  // after keepalive comments: an error event ends the stream
    std::string event = format_.NewStream()->OnError(WithoutAddresses(outcome.error, urls_));
    co_await WriteSseBytes(cs, std::move(event), true);
    co_return false;
  }
  if (outcome.reply == Reply::kWhole) {
    co_return co_await SendResponse(socket_, req_, !stopping_.load(), static_cast<http::status>(outcome.status),
                                    std::move(outcome.body), outcome.content_type, std::move(outcome.headers));
  }
  if (outcome.reply == Reply::kBreak) {
    co_await WriteSseBytes(cs, std::move(outcome.body), false);  // (nothing, when nothing is left)
    co_return false;
  }
  if (outcome.reply == Reply::kStreamEnd && outcome.stream) outcome.body += outcome.stream->OnEnd();
  co_await WriteSseBytes(cs, std::move(outcome.body), true);
  // An error event ends the stream, and the connection: the upstream's is not reusable.
  co_return outcome.reply == Reply::kStreamEnd && !cs.failed;
}

}  // namespace forge::proxy
