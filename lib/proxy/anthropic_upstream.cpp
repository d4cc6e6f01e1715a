// The pass-through call path for an Anthropic-format upstream; see
// anthropic_upstream.h. Attribution, limits and pausing happened in
// HandleCall (call.cpp) before this is called; the exchange is opened as
// any call's is (Server::OpenExchange).
#include "proxy/anthropic_upstream.h"

#include <limits>

#include "base/json_field.h"
#include "base/json_parse.h"
#include "proxy/call.h"
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

// The Anthropic API's error event: the client format's own.
std::string ErrorEvent(const ClientFormat& format, const std::string& message, const std::vector<std::string>& urls) {
  return format.NewStream()->OnError(WithoutAddresses(message, urls));
}

// What a read of the stream brought: its events, relayed into out as they
// came; false: the stream ends (an error, the upstream's or the proxy's).
bool RelayEvents(AnthropicRelay& s, store::CallRecord& rec, const std::string& url, std::string_view bytes,
                 std::string& out) {
  s.events.clear();
  if (!s.sse.Feed(bytes, s.events)) {
    s.error = "upstream " + url + " sent an SSE line longer than 64 MiB";
    s.upstream_broke = true;
    return false;
  }
  for (const SseEvent& event : s.events) {
    Json data = ParseJsonOrDiscarded(event.data);
    std::string frame = (event.event.empty() ? "" : "event: " + event.event + "\n") + "data: " + event.data + "\n\n";
    if (data.is_discarded()) {
      if (s.malformed_note.empty()) {
        s.malformed_note = "upstream " + url + " sent an event that is not JSON (relayed to the client as sent)";
      }
      out += frame;
      continue;
    }
    if (rec.first_token_at == 0) rec.first_token_at = NowSeconds();
    s.assembled.Add(event.event, data);
    if (!s.assembled.error().empty()) {
      s.error = "upstream " + url + " error: " + s.assembled.error();
      out += frame;  // the upstream's own error event, as the client expects it
      return false;
    }
    (s.assembled.stopped() ? s.held : out) += frame;
  }
  return true;
}

}  // namespace

Task<bool> Server::HandleAnthropicUpstream(Call& call) {
  std::string_view target(call.req.target().data(), call.req.target().size());
  size_t q = target.find('?');
  std::string path = call.format->name() == "anthropic-count-tokens" ? "/v1/messages/count_tokens" : "/v1/messages";
  if (q != std::string_view::npos) path += std::string(target.substr(q));  // ?beta=true
  std::string version(call.req["anthropic-version"]);
  if (version.empty()) version = kDefaultAnthropicVersion;
  std::string beta(call.req["anthropic-beta"]);
  const bool streaming = call.chat.stream;

  store::CallRecord& rec = call.rec;
  rec.model = JsonText(call.client_request, "model");
  rec.request = call.client_request;
  rec.upstream_request = std::move(call.client_request);

  // Connect and send; connection failures go to the next upstream.
  UpstreamExchange& exchange = call.exchange;
  exchange.client = &call.client;
  bool answered = co_await OpenExchange(exchange, rec, call.t0, [&](const Upstream& u) {
    RequestHead up(u.base_path + path);
    up.Set("Host", u.host);
    up.Set("Content-Type", "application/json");
    up.Set("Accept", streaming ? "text/event-stream" : "application/json");
    up.Set("anthropic-version", version);
    if (!beta.empty()) up.Set("anthropic-beta", beta);
    if (!upstreams_.api_key().empty()) up.Set("x-api-key", upstreams_.api_key());
    return up;
  }, call.req.body());  // untranslated: the client's bytes
  if (!answered) co_return co_await FailAnthropicCall(call, exchange.FailureStatus(), exchange.error);
  std::string content_type(exchange.parser->get()[http::field::content_type]);
  if (content_type.find("text/event-stream") == std::string::npos) {
    co_return co_await RelayAnthropicWhole(call, content_type);
  }
  co_return co_await RelayAnthropicStream(call);
}

Task<bool> Server::FailAnthropicCall(Call& call, int status, std::string message) {
  store::CallRecord& rec = call.rec;
  metrics_.upstream_errors.fetch_add(status >= 500 ? 1 : 0);
  rec.http_status = status;
  rec.error = message;
  rec.retry_key.clear();
  EndRecord(rec, call.t0);
  co_await Commit(std::move(rec));
  if (status == kClientHungUpStatus) co_return false;  // no one to tell
  // (A stream that began ends in its own way: CommitAnthropicStream.)
  co_return co_await Reject(call, status, message);
}

// A whole answer (or an error): relayed as the upstream sent it.
Task<bool> Server::RelayAnthropicWhole(Call& call, std::string& content_type) {
  UpstreamExchange& exchange = call.exchange;
  store::CallRecord& rec = call.rec;
  int status = exchange.parser->get().result_int();
  std::string body;
  bool read = co_await ReadWholeAnswer(exchange, body);
  if (!read) co_return co_await FailAnthropicCall(call, exchange.FailureStatus(), exchange.error);
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
    rec.retry_key = call.retry_key;
  }
  EndRecord(rec, call.t0);
  Status committed = co_await Commit(std::move(rec));
  if (!committed.ok()) co_return co_await Reject(call, 500, "the call could not be recorded: " + committed.message());
  // Named, not a temporary in the co_await: g++12 destroys such temporaries twice.
  if (content_type.empty()) content_type = "application/json";
  // An error keeps the upstream's retry headers (retry-after on a 429 or a 529 overloaded_error).
  co_return co_await Send(call.client, call.req, static_cast<http::status>(status), std::move(body), content_type,
                          status >= 400 ? RetryHeaders(exchange.parser->get()) : Headers());
}

// A stream: each event goes to the client as it arrives; message_stop is
// held until the call is committed.
Task<bool> Server::RelayAnthropicStream(Call& call) {
  UpstreamExchange& exchange = call.exchange;
  ClientStream cs;
  cs.socket = &call.client;
  cs.version = call.req.version();
  std::vector<char> buf(16384);
  co_await WriteSseBytes(cs, "", false);  // the header
  if (cs.failed) co_return co_await FailAnthropicCall(call, kClientHungUpStatus, "the client closed the connection");
  AnthropicRelay s;
  auto& parser = *exchange.parser;
  while (!parser.is_done() && !s.assembled.stopped()) {
    beast::error_code ec;
    parser.get().body().data = buf.data();
    parser.get().body().size = buf.size();
    co_await ReadHttp(exchange.conn->stream, exchange.conn->buffer, parser, ReadUntil::kSome, ec);
    if (ec == http::error::need_buffer) ec = {};
    std::string_view bytes(buf.data(), buf.size() - parser.get().body().size);
    std::string out;
    bool go_on = RelayEvents(s, call.rec, exchange.upstream->url, bytes, out);
    if (!out.empty()) {
      co_await WriteSseBytes(cs, std::move(out), false);
      if (cs.failed) {
        s.error = "the client closed the connection mid-stream";
        break;
      }
    }
    if (!go_on) break;
    if (ec) {
      s.error = MidStreamError(ec, exchange.upstream->url, cs, s.upstream_broke);
      break;
    }
  }
  if (s.error.empty() && !s.assembled.stopped()) {
    s.error = "upstream " + exchange.upstream->url + " ended the stream without message_stop";
    s.upstream_broke = true;
  }
  co_return co_await CommitAnthropicStream(call, cs, s);
}

Task<bool> Server::CommitAnthropicStream(Call& call, ClientStream& cs, AnthropicRelay& s) {
  store::CallRecord& rec = call.rec;
  rec.response = s.assembled.Result();
  rec.upstream_response = rec.response;
  FillFromMessage(rec, rec.response);
  if (!s.error.empty()) {
    bool upstream_sent_error = !s.assembled.error().empty();
    rec.http_status = cs.failed ? kClientHungUpStatus : 502;
    rec.error = s.error;
    rec.retry_key.clear();
    metrics_.upstream_errors.fetch_add(rec.http_status == 502 ? 1 : 0);
    EndRecord(rec, call.t0);
    co_await Commit(std::move(rec));
    // A broken upstream connection breaks the client's, after what was sent
    // (Claude Code retries a broken stream).
    if (s.upstream_broke) co_return false;
    // An error event the upstream sent was relayed already: the stream just
    // ends. (Named: g++12 destroys a conditional's temporary inside co_await twice.)
    std::string event = upstream_sent_error ? std::string() : ErrorEvent(*call.format, s.error, config_.upstreams);
    co_await WriteSseBytes(cs, std::move(event), true);
    co_return false;
  }
  UpstreamExchange& exchange = call.exchange;
  if (exchange.parser->is_done() && exchange.parser->get().keep_alive()) {
    upstreams_.Release(*exchange.upstream, std::move(exchange.conn));
  }
  rec.http_status = s.malformed_note.empty() ? 200 : 502;
  rec.error = s.malformed_note;
  if (s.malformed_note.empty()) rec.retry_key = call.retry_key;
  metrics_.upstream_errors.fetch_add(s.malformed_note.empty() ? 0 : 1);
  EndRecord(rec, call.t0);
  Status committed = co_await Commit(std::move(rec));
  if (!committed.ok()) {
    s.held = ErrorEvent(*call.format, "the call could not be recorded: " + committed.message(), config_.upstreams);
  }
  co_await WriteSseBytes(cs, std::move(s.held), true);
  co_return !cs.failed && committed.ok();
}

}  // namespace forge::proxy
