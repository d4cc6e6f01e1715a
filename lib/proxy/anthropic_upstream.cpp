// The Anthropic Messages upstream (upstream_api_asio.h; what it passes through:
// anthropic_upstream.h). Attribution, limits and pausing happened before
// (call_handler_asio.h), and the exchange is opened as any call's is
// (upstream_exchange_asio.h).
#include "proxy/anthropic_upstream.h"

#include "base/json_field.h"
#include "base/json_parse.h"
#include "proxy/asio.h"
#include "proxy/http_read_asio.h"
#include "proxy/recorder.h"
#include "proxy/upstream_api_asio.h"
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

// What a read of the stream brought: its events, relayed into out as they
// came; false: the stream ends (an error, the upstream's or the proxy's).
bool RelayAnthropicEvents(AnthropicRelay& s, store::CallRecord& rec, const std::string& url, std::string_view bytes,
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

class AnthropicUpstream final : public UpstreamApi {
 public:
  AnthropicUpstream(DecodedCall& call, const Request& req, const UpstreamServices& services)
      : call_(call), services_(services), version_(req["anthropic-version"]), beta_(req["anthropic-beta"]) {
    std::string_view target(req.target().data(), req.target().size());
    path_ = call.url.format == FormatId::kAnthropicCountTokens ? "/v1/messages/count_tokens" : "/v1/messages";
    if (size_t q = target.find('?'); q != std::string_view::npos) path_ += target.substr(q);  // ?beta=true
    if (version_.empty()) version_ = kDefaultAnthropicVersion;
  }

  void Prepare(std::string&& client_body, store::CallRecord& rec) override {
    rec.model = JsonText(call_.client_request, "model");
    rec.request = call_.client_request;
    rec.upstream_request = std::move(call_.client_request);
    body_ = std::move(client_body);  // untranslated: the client's bytes
  }

  RequestHead Head(const Upstream& u) const override {
    RequestHead up(u.base_path + path_);
    up.Set("Host", u.host);
    up.Set("Content-Type", "application/json");
    up.Set("Accept", call_.chat.stream ? "text/event-stream" : "application/json");
    up.Set("anthropic-version", version_);
    if (!beta_.empty()) up.Set("anthropic-beta", beta_);
    if (!services_.pool.api_key().empty()) up.Set("x-api-key", services_.pool.api_key());
    return up;
  }

  BodyPieces Body() const override { return body_; }
  bool KeepsAlive() const override { return false; }

  Task<Outcome> Relay(UpstreamAnswer& answer, ClientStream& client, store::CallRecord& rec) override {
    std::string content_type(answer.parser->get()[http::field::content_type]);
    if (content_type.find("text/event-stream") == std::string::npos) {
      co_return co_await RelayWhole(answer, std::move(content_type), rec);
    }
    co_return co_await RelayStream(answer, client, rec);
  }

 private:
  Task<Outcome> RelayWhole(UpstreamAnswer& answer, std::string content_type, store::CallRecord& rec);
  Task<Outcome> RelayStream(UpstreamAnswer& answer, ClientStream& cs, store::CallRecord& rec);
  Outcome EndStream(AnthropicRelay& s, UpstreamAnswer& answer, bool client_gone, store::CallRecord& rec);

  DecodedCall& call_;
  const UpstreamServices& services_;
  std::string path_;
  std::string version_;
  std::string beta_;
  std::string body_;
};

// A whole answer (or an error): relayed as the upstream sent it.
Task<Outcome> AnthropicUpstream::RelayWhole(UpstreamAnswer& answer, std::string content_type,
                                            store::CallRecord& rec) {
  int status = answer.parser->get().result_int();
  // An error keeps the upstream's retry headers (retry-after on a 429 or a 529 overloaded_error).
  Headers retry_headers = status >= 400 ? RetryHeaders(answer.parser->get()) : Headers();
  std::string body;
  if (!co_await ReadWholeAnswer(answer, services_.pool, body)) {
    co_return Outcome::Failed(answer.FailureStatus(), answer.error);
  }
  rec.first_token_at = NowSeconds();
  Json message = ParseJsonOrDiscarded(body);
  rec.response = message.is_discarded() ? Json(body) : message;
  rec.upstream_response = rec.response;
  Outcome whole = Outcome::Whole(status, std::move(body));
  if (status >= 400) {
    const Json& e = message.is_object() ? message.value("error", Json()) : Json();
    whole.error = "upstream answered " + std::to_string(status) + ": " +
                  (e.is_object() ? JsonText(e, "message", e.dump()) : whole.body.substr(0, 512));
  } else {
    FillFromMessage(rec, message);
  }
  whole.content_type = content_type.empty() ? "application/json" : std::move(content_type);
  whole.headers = std::move(retry_headers);
  co_return whole;
}

// A stream: each event goes to the client as it arrives; message_stop is
// held until the call is committed.
Task<Outcome> AnthropicUpstream::RelayStream(UpstreamAnswer& answer, ClientStream& cs, store::CallRecord& rec) {
  std::vector<char> buf(16384);
  co_await WriteSseBytes(cs, "", false);  // the header
  if (cs.failed) co_return Outcome::Failed(kClientHungUpStatus, "the client closed the connection");
  AnthropicRelay s;
  const std::string& url = answer.upstream->url;
  auto& parser = *answer.parser;
  while (!parser.is_done() && !s.assembled.stopped()) {
    beast::error_code ec;
    parser.get().body().data = buf.data();
    parser.get().body().size = buf.size();
    co_await ReadHttp(answer.conn->stream, answer.conn->buffer, parser, ReadUntil::kSome, ec);
    if (ec == http::error::need_buffer) ec = {};
    std::string_view bytes(buf.data(), buf.size() - parser.get().body().size);
    std::string out;
    bool go_on = RelayAnthropicEvents(s, rec, url, bytes, out);
    if (!out.empty()) {
      co_await WriteSseBytes(cs, std::move(out), false);
      if (cs.failed) {
        s.error = "the client closed the connection mid-stream";
        break;
      }
    }
    if (!go_on) break;
    if (ec) {
      s.error = MidStreamError(ec, url, cs.failed, s.upstream_broke);
      break;
    }
  }
  if (s.error.empty() && !s.assembled.stopped()) {
    s.error = "upstream " + url + " ended the stream without message_stop";
    s.upstream_broke = true;
  }
  co_return EndStream(s, answer, cs.failed, rec);
}

Outcome AnthropicUpstream::EndStream(AnthropicRelay& s, UpstreamAnswer& answer, bool client_gone,
                                     store::CallRecord& rec) {
  rec.response = s.assembled.Result();
  rec.upstream_response = rec.response;
  FillFromMessage(rec, rec.response);
  if (!s.error.empty()) {
    Outcome failed = Outcome::Failed(client_gone ? kClientHungUpStatus : 502, s.error);
    if (client_gone) return failed;
    // A broken upstream connection breaks the client's, after what was sent
    // (Claude Code retries a broken stream). An error event the upstream
    // sent was relayed already: the stream just ends.
    failed.reply = s.upstream_broke ? Outcome::Reply::kBreak : Outcome::Reply::kStreamError;
    if (!s.upstream_broke && s.assembled.error().empty()) {
      failed.body = call_.format->NewStream()->OnError(WithoutAddresses(s.error, services_.urls));
    }
    return failed;
  }
  if (answer.parser->is_done() && answer.parser->get().keep_alive()) {
    services_.pool.Release(*answer.upstream, std::move(answer.conn));
  }
  // The upstream's own events end the stream (null: no translator's end).
  Outcome ended = Outcome::StreamEnd(std::move(s.held), nullptr);
  if (!s.malformed_note.empty()) {
    ended.status = 502;
    ended.error = s.malformed_note;
  }
  return ended;
}

}  // namespace

std::unique_ptr<UpstreamApi> NewAnthropicUpstream(DecodedCall& call, const Request& req,
                                                  const UpstreamServices& services) {
  return std::make_unique<AnthropicUpstream>(call, req, services);
}

}  // namespace forge::proxy
