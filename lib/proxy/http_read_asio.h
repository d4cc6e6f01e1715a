// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// Reading an HTTP message into a Beast parser from any stream with
// `Task<size_t> ReadSome(asio::mutable_buffer, beast::error_code&)`: what is
// already buffered is parsed first and the stream is read only for more.
// The same steps as Beast's own read, without an asynchronous operation
// (and its trip through the scheduler) when the bytes are already there.
#pragma once

#include <algorithm>
#include <string>

#include "proxy/asio.h"

namespace forge::proxy {

enum class ReadUntil {
  kHeader,
  kMessage,
  kSome,  // parses what is buffered, or else what one read brings: a stream's next events
};

// Reads until the parser has the header, the whole message, or some more of
// it (at least one byte parsed, or the end). Errors are
// Beast's: end_of_stream when the peer closed before a byte of the message,
// partial_message when it closed in the middle, need_buffer when a
// buffer_body's space is full (give it more and call again), body_limit.
template <typename Stream, bool isRequest>
Task<void> ReadHttp(Stream& stream, beast::flat_buffer& buffer, http::basic_parser<isRequest>& parser,
                    ReadUntil until, beast::error_code& ec) {
  ec = {};
  auto reached = [&] { return until == ReadUntil::kHeader ? parser.is_header_done() : parser.is_done(); };
  parser.eager(until != ReadUntil::kHeader);
  for (;;) {
    if (reached()) co_return;
    if (buffer.size() > 0) {
      size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec && ec != http::error::need_more) co_return;
      ec = {};
      if (used > 0 && until == ReadUntil::kSome) co_return;
      if (used > 0) continue;
    }
    // As much as the buffer has room for, and at least a small request's worth
    // (Beast reads 512 bytes at a time into a new buffer).
    size_t room = std::max<size_t>(buffer.capacity() - buffer.size(), 4096);
    size_t n = co_await stream.ReadSome(buffer.prepare(std::min(room, buffer.max_size() - buffer.size())), ec);
    if (ec == asio::error::eof) {
      if (!parser.got_some() && buffer.size() == 0) {
        ec = http::error::end_of_stream;
        co_return;
      }
      ec = {};
      parser.put_eof(ec);
      co_return;
    }
    if (ec) co_return;
    buffer.commit(n);
  }
}

// Reads a body of `length` bytes into body: what is buffered first, then
// straight from the stream into the string, so a large body is neither read
// into the buffer nor copied out of it. partial_message when the peer
// closes before its end.
template <typename Stream>
Task<void> ReadBodyInto(Stream& stream, beast::flat_buffer& buffer, size_t length, std::string& body,
                        beast::error_code& ec) {
  ec = {};
  body.resize(length);
  size_t have = asio::buffer_copy(asio::buffer(body.data(), length), buffer.data());
  buffer.consume(have);
  while (have < length) {
    size_t n = co_await stream.ReadSome(asio::buffer(body.data() + have, length - have), ec);
    if (ec == asio::error::eof) ec = http::error::partial_message;
    if (ec) co_return;
    have += n;
  }
}

}  // namespace forge::proxy
