// The pass-through call path for an Anthropic-format upstream; see
// anthropic_upstream.h. Attribution, limits and pausing happened in
// HandleCall (call.cpp) before this is called.
#include "proxy/anthropic_upstream.h"

#include <limits>

#include "base/json_field.h"
#include "base/json_parse.h"
#include "proxy/client_stream.h"
#include "proxy/http_read.h"
#include "proxy/server.h"
#include "proxy/sse.h"
#include "proxy/upstream_faults.h"

namespace forge::proxy {

using Json = nlohmann::json;

void AnthropicMessageAssembler::Add(std::string_view event, const Json& data) {
  if (!data.is_object()) return;
  auto text_of = [](const Json& object, const char* key, std::string fallback) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
  };
  std::string type = text_of(data, "type", std::string(event));
  // An index that is not a small non-negative integer: the event is skipped.
  auto at = JsonIndex(data);
  if (type.rfind("content_block_", 0) == 0 && (!at || *at > kMaxStreamIndex)) return;
  size_t index = at.value_or(0);
  if (type == "message_start" && data.contains("message") && data["message"].is_object()) {
    message_ = data["message"];
    if (!message_.contains("content") || !message_["content"].is_array()) message_["content"] = Json::array();
  } else if (type == "content_block_start") {
    Json& content = message_["content"];
    if (!content.is_array()) content = Json::array();
    while (content.size() <= index) content.push_back(Json::object());
    auto block = data.find("content_block");
    content[index] = block != data.end() && block->is_object() ? *block : Json::object();
  } else if (type == "content_block_delta") {
    Json& content = message_["content"];
    if (!content.is_array() || index >= content.size() || !data.contains("delta") || !data["delta"].is_object()) return;
    Json& block = content[index];
    if (!block.is_object()) return;
    const Json& delta = data["delta"];
    auto append = [&](const char* field, const char* from) {
      if (!delta.contains(from) || !delta[from].is_string()) return;
      std::string text = text_of(block, field, "");
      block[field] = text + delta[from].get<std::string>();
    };
    std::string kind = text_of(delta, "type", "");
    if (kind == "text_delta") append("text", "text");
    if (kind == "thinking_delta") append("thinking", "thinking");
    if (kind == "signature_delta" && delta.contains("signature")) block["signature"] = delta["signature"];
    if (kind == "input_json_delta" && delta.contains("partial_json") && delta["partial_json"].is_string()) {
      partial_json_[index] += delta["partial_json"].get<std::string>();
    }
  } else if (type == "content_block_stop") {
    auto it = partial_json_.find(index);
    if (it != partial_json_.end() && message_["content"].is_array() && index < message_["content"].size() &&
        message_["content"][index].is_object()) {
      Json input = Json::parse(it->second, nullptr, false);
      message_["content"][index]["input"] = input.is_discarded() ? Json(it->second) : input;
      partial_json_.erase(it);
    }
  } else if (type == "message_delta") {
    if (data.contains("delta") && data["delta"].is_object()) {
      for (const auto& [key, value] : data["delta"].items()) message_[key] = value;
    }
    if (data.contains("usage") && data["usage"].is_object()) {
      if (!message_["usage"].is_object()) message_["usage"] = Json::object();
      for (const auto& [key, value] : data["usage"].items()) message_["usage"][key] = value;
    }
  } else if (type == "message_stop") {
    stopped_ = true;
  } else if (type == "error") {
    const Json& e = data.value("error", Json());
    error_ = e.is_object() ? text_of(e, "message", e.dump()) : data.dump();
  }
}

Json AnthropicMessageAssembler::Result() const { return message_; }

namespace {

// What the record keeps of an Anthropic answer.
void FillFromMessage(store::CallRecord& rec, const Json& message) {
  if (!message.is_object()) return;
  if (auto reason = message.find("stop_reason"); reason != message.end() && reason->is_string()) {
    rec.finish_reason = *reason;
  }
  if (auto usage = message.find("usage"); usage != message.end()) rec.usage = *usage;
}

}  // namespace

Task<bool> Server::HandleAnthropicUpstream(tcp::socket& client, Request& req, const ClientFormat& format,
                                           bool streaming, Json& client_request, store::CallRecord& rec,
                                           const std::string& retry_key, double t0) {
  auto finish = [&](store::CallRecord& r) {
    r.ended_at = NowSeconds();
    r.policy_version_end = policy_version_.load();
    metrics_.ObserveLatency(MonotonicSeconds() - t0);
  };
  auto reply_error = [&](int status, const std::string& message) -> Task<bool> {
    co_return co_await Send(client, req, static_cast<http::status>(status),
                            format.ErrorBody(status, WithoutAddresses(message, config_.upstreams)).dump());
  };
  ClientStream cs;
  cs.socket = &client;
  cs.version = req.version();
  // An error event as the Anthropic API sends one: the client format's own.
  auto error_event = [&](const std::string& message) {
    return format.NewStream()->OnError(WithoutAddresses(message, config_.upstreams));
  };
  // Ends the call as failed and recorded; the client gets an error unless
  // the stream already began (then an error event).
  auto fail_call = [&](int status, std::string message) -> Task<bool> {
    metrics_.upstream_errors.fetch_add(status >= 500 ? 1 : 0);
    rec.http_status = status;
    rec.error = message;
    rec.retry_key.clear();
    finish(rec);
    co_await Commit(std::move(rec));
    if (status == kClientHungUpStatus) co_return false;  // no one to tell
    if (!cs.headers_sent) co_return co_await reply_error(status, message);
    std::string event = error_event(message);
    co_await WriteSseBytes(cs, std::move(event), true);
    co_return false;
  };

  std::string_view target(req.target().data(), req.target().size());
  size_t q = target.find('?');
  std::string path = format.name() == "anthropic-count-tokens" ? "/v1/messages/count_tokens" : "/v1/messages";
  if (q != std::string_view::npos) path += std::string(target.substr(q));  // ?beta=true
  std::string version(req["anthropic-version"]);
  if (version.empty()) version = kDefaultAnthropicVersion;
  std::string beta(req["anthropic-beta"]);

  rec.model = JsonText(client_request, "model");
  rec.request = client_request;
  rec.upstream_request = std::move(client_request);

  // Connect and send; connection failures go to the next upstream.
  UpstreamExchange exchange;
  exchange.client = &client;
  co_await ExchangeWithUpstream(rec.rollout_id, exchange, [&](const Upstream& u) {
    RequestHead up(u.base_path + path);
    up.Set("Host", u.host);
    up.Set("Content-Type", "application/json");
    up.Set("Accept", streaming ? "text/event-stream" : "application/json");
    up.Set("anthropic-version", version);
    if (!beta.empty()) up.Set("anthropic-beta", beta);
    if (!upstreams_.api_key().empty()) up.Set("x-api-key", upstreams_.api_key());
    return up;
  }, req.body());  // untranslated: the client's bytes
  std::unique_ptr<UpstreamConn>& conn = exchange.conn;
  Upstream* upstream = exchange.upstream;
  std::optional<http::response_parser<http::buffer_body>>& parser = exchange.parser;
  if (!conn) {
    co_return co_await fail_call(exchange.client_gone ? kClientHungUpStatus : exchange.timed_out ? 504 : 502,
                                 exchange.error);
  }
  rec.upstream = upstream->url;
  OutstandingCall outstanding(*upstream);

  int status = parser->get().result_int();
  std::string content_type(parser->get()[http::field::content_type]);
  if (content_type.find("text/event-stream") == std::string::npos) {
    // A whole answer (or an error): relayed as the upstream sent it.
    std::string body;
    beast::error_code ec = co_await AppendWholeUpstreamBody(exchange, body);
    if (ec == ClientHungUp()) co_return co_await fail_call(kClientHungUpStatus, kClientHungUpMessage);
    if (ec) co_return co_await fail_call(ec == beast::error::timeout ? 504 : 502,
                                         "upstream " + upstream->url + " failed mid-response: " + ec.message());
    if (parser->get().keep_alive()) upstreams_.Release(*upstream, std::move(conn));
    rec.first_token_at = NowSeconds();
    Json message = ParseJsonOrDiscarded(body);
    rec.response = message.is_discarded() ? Json(body) : message;
    rec.upstream_response = rec.response;
    rec.http_status = status;
    if (status >= 400) {
      metrics_.upstream_errors.fetch_add(status >= 500 ? 1 : 0);
      const Json& e = message.is_object() ? message.value("error", Json()) : Json();
      rec.error = "upstream answered " + std::to_string(status) + ": " +
                  (e.is_object() ? JsonText(e, "message", e.dump()) : body.substr(0, 512));
    } else {
      FillFromMessage(rec, message);
      rec.retry_key = retry_key;
    }
    finish(rec);
    Status committed = co_await Commit(std::move(rec));
    if (!committed.ok()) co_return co_await reply_error(500, "the call could not be recorded: " + committed.message());
    // Named, not a temporary in the co_await: g++12 destroys such temporaries twice.
    if (content_type.empty()) content_type = "application/json";
    // An error keeps the upstream's retry headers (retry-after on a 429 or a 529 overloaded_error).
    co_return co_await Send(client, req, static_cast<http::status>(status), std::move(body), content_type,
                            status >= 400 ? RetryHeaders(parser->get()) : Headers());
  }

  // A stream: each event goes to the client as it arrives; message_stop is
  // held until the call is committed.
  std::vector<char> buf(16384);
  // Reads some of the body; the bytes read are appended to out.
  auto read_some = [&](std::string& out) -> Task<beast::error_code> {
    beast::error_code ec;
    parser->get().body().data = buf.data();
    parser->get().body().size = buf.size();
    co_await ReadHttp(conn->stream, conn->buffer, *parser, ReadUntil::kSome, ec);
    if (ec == http::error::need_buffer) ec = {};
    out.append(buf.data(), buf.size() - parser->get().body().size);
    co_return ec;
  };
  co_await WriteSseBytes(cs, "", false);  // the header
  if (cs.failed) co_return co_await fail_call(kClientHungUpStatus, "the client closed the connection");
  AnthropicMessageAssembler assembled;
  SseParser sse;
  SseEvents events;
  std::string held;
  std::string stream_error;
  bool upstream_broke = false;  // its connection broke or went silent mid-answer
  // An event that is not JSON is relayed as sent and the stream goes on (as
  // in call.cpp); the record says so.
  std::string malformed_note;
  while (!parser->is_done() && !assembled.stopped()) {
    std::string bytes;
    beast::error_code ec = co_await read_some(bytes);
    events.clear();
    if (!sse.Feed(bytes, events)) {
      stream_error = "upstream " + upstream->url + " sent an SSE line longer than 64 MiB";
      upstream_broke = true;
      break;
    }
    std::string out;
    for (const SseEvent& event : events) {
      Json data = ParseJsonOrDiscarded(event.data);
      std::string frame = (event.event.empty() ? "" : "event: " + event.event + "\n") + "data: " + event.data + "\n\n";
      if (data.is_discarded()) {
        if (malformed_note.empty()) {
          malformed_note = "upstream " + upstream->url + " sent an event that is not JSON (relayed to the client as sent)";
        }
        out += frame;
        continue;
      }
      if (rec.first_token_at == 0) rec.first_token_at = NowSeconds();
      assembled.Add(event.event, data);
      if (!assembled.error().empty()) {
        stream_error = "upstream " + upstream->url + " error: " + assembled.error();
        out += frame;  // the upstream's own error event, as the client expects it
        break;
      }
      (assembled.stopped() ? held : out) += frame;
    }
    if (!out.empty()) {
      co_await WriteSseBytes(cs, std::move(out), false);
      if (cs.failed) {
        stream_error = "the client closed the connection mid-stream";
        break;
      }
    }
    if (!stream_error.empty()) break;
    if (ec == ClientHungUp()) {
      cs.failed = true;
      stream_error = kClientHungUpMessage;
      break;
    }
    if (ec) {
      stream_error = "upstream " + upstream->url + (ec == beast::error::timeout ? " stalled mid-stream: " : " broke off the stream: ") + ec.message();
      upstream_broke = true;
      break;
    }
  }
  if (stream_error.empty() && !assembled.stopped()) {
    stream_error = "upstream " + upstream->url + " ended the stream without message_stop";
    upstream_broke = true;
  }
  rec.response = assembled.Result();
  rec.upstream_response = rec.response;
  FillFromMessage(rec, rec.response);
  if (!stream_error.empty()) {
    bool upstream_sent_error = !assembled.error().empty();
    rec.http_status = cs.failed ? kClientHungUpStatus : 502;
    rec.error = stream_error;
    rec.retry_key.clear();
    metrics_.upstream_errors.fetch_add(rec.http_status == 502 ? 1 : 0);
    finish(rec);
    co_await Commit(std::move(rec));
    // A broken upstream connection breaks the client's, after what was sent
    // (Claude Code retries a broken stream).
    if (upstream_broke) co_return false;
    // An error event the upstream sent was relayed already: the stream just
    // ends. (Named: g++12 destroys a conditional's temporary inside co_await twice.)
    std::string event = upstream_sent_error ? std::string() : error_event(stream_error);
    co_await WriteSseBytes(cs, std::move(event), true);
    co_return false;
  }
  if (parser->is_done() && parser->get().keep_alive()) upstreams_.Release(*upstream, std::move(conn));
  rec.http_status = malformed_note.empty() ? 200 : 502;
  rec.error = malformed_note;
  if (malformed_note.empty()) rec.retry_key = retry_key;
  metrics_.upstream_errors.fetch_add(malformed_note.empty() ? 0 : 1);
  finish(rec);
  Status committed = co_await Commit(std::move(rec));
  if (!committed.ok()) held = error_event("the call could not be recorded: " + committed.message());
  co_await WriteSseBytes(cs, std::move(held), true);
  co_return !cs.failed && committed.ok();
}

}  // namespace forge::proxy
