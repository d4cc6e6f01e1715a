// The OpenAI-compatible upstream (upstream_api_asio.h): the request goes as chat
// completions, with the capture fields (return_token_ids, logprobs) added,
// and the answer comes back with its token ids and logprobs captured into
// the record and cut from what the client did not ask for. A request in the
// upstream's own format (chat, completions) goes as the client's bytes with
// the fields spliced in, and its answer is relayed as bytes
// (pass_through.h); any other was translated to chat (decode.h) and its
// answer is translated back by the client's format, event by event.
#include <memory>
#include <tuple>

#include "base/json_dump.h"
#include "base/json_field.h"
#include "base/json_parse.h"
#include "proxy/asio.h"
#include "proxy/chat_assembler.h"
#include "proxy/http_read_asio.h"
#include "proxy/pass_through.h"
#include "proxy/recorder.h"
#include "proxy/sse.h"
#include "proxy/stream_relay.h"
#include "proxy/token_capture.h"
#include "proxy/upstream_api_asio.h"
#include "proxy/upstream_faults.h"

namespace forge::proxy {
namespace {

constexpr const char* kNoTokenIdsMessage =
    "the upstream answered without token ids (it ignores return_token_ids; vLLM sends them from 0.10.2) and "
    "--require-token-ids is set";

// A chunk after which the client may consider the response complete: it holds
// a finish reason, or is the trailing usage chunk.
bool IsFinalChunk(const Json& chunk) {
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return true;
  for (const auto& c : *choices) {
    if (c.contains("finish_reason") && !c["finish_reason"].is_null()) return true;
  }
  return false;
}

void TakeTokens(store::CallRecord& rec, CapturedTokens& tokens) {
  rec.prompt_ids = std::move(tokens.prompt_ids);
  rec.completion_ids = std::move(tokens.completion_ids);
  rec.logprobs = std::move(tokens.logprobs);
  rec.mm_placeholders = std::move(tokens.mm_placeholders);
}

// A streamed answer as it is relayed: each event as it arrives, the final
// chunks held until the call is committed.
struct StreamRelay {
  StreamRelay(std::unique_ptr<StreamTranslator> translator, const std::string& url, store::CallRecord& rec)
      : translator(std::move(translator)), url(url), rec(rec) {}

  std::unique_ptr<StreamTranslator> translator;
  const std::string& url;  // the upstream's
  store::CallRecord& rec;
  // The translator assembles the client's view; pass-through formats see the
  // same chunks, so only translating formats need a second, chat-form assembly.
  // (Byte-level pass-through assembles its own, from the stripped chunks.)
  ChatAssembler upstream_assembled;
  Json usage;
  CapturedTokens tokens;
  SseParser sse;
  SseEvents events;
  std::string held;
  bool saw_done = false;
  std::string error;
  bool upstream_broke = false;  // its connection broke or went silent mid-answer
  // An event that is not JSON goes to the client as the upstream sent it, in
  // the client's format's framing, and the stream goes on, as it would from
  // a server with that bug (harnesses differ: some skip it, some fail and
  // retry). The record keeps the tokens before it and says so.
  std::string malformed_note;
  CapturedTokens tokens_before_malformed;

  void FirstToken() {
    if (rec.first_token_at == 0) rec.first_token_at = NowSeconds();
  }
  // Bytes go to the client now (out), or, for a final chunk, are held until
  // the call is committed; what was held goes before any chunk that is not final.
  void Emit(bool final, std::string_view bytes, std::string& out) {
    if (final) {
      held += bytes;
      return;
    }
    out += held;
    held.clear();
    out += bytes;
  }
};

class OpenAIUpstream final : public UpstreamApi {
 public:
  OpenAIUpstream(DecodedCall& call, bool cut_through, const UpstreamServices& services)
      : call_(call), cut_through_(cut_through), services_(services) {}

  void Prepare(std::string&& client_body, store::CallRecord& rec) override;
  RequestHead Head(const Upstream& u) const override;
  BodyPieces Body() const override { return body_; }
  bool KeepsAlive() const override { return true; }
  Task<Outcome> Relay(UpstreamAnswer& answer, ClientStream& client, store::CallRecord& rec) override;

 private:
  Task<Outcome> RelayWhole(UpstreamAnswer& answer, store::CallRecord& rec);
  Outcome WholeBytes(std::string& text, const std::string& url, store::CallRecord& rec);
  Outcome WholeTranslated(std::string& text, const std::string& url, store::CallRecord& rec);
  Task<Outcome> RelayStream(UpstreamAnswer& answer, ClientStream& cs, store::CallRecord& rec);
  bool RelayEvents(StreamRelay& s, std::string_view bytes, std::string& out);
  bool RelayBytesEvent(StreamRelay& s, const SseEvent& event, std::string& out);
  bool RelayTranslatedEvent(StreamRelay& s, const SseEvent& event, std::string& out);
  void RelayMalformed(StreamRelay& s, const std::string& data, std::string& out);
  Json RecordStream(StreamRelay& s);
  Outcome EndStream(StreamRelay& s, UpstreamAnswer& answer, bool client_gone);

  DecodedCall& call_;
  const bool cut_through_;
  const UpstreamServices& services_;
  CaptureWants wants_;
  bool client_wants_usage_ = true;
  BodyPieces body_;
};

void OpenAIUpstream::Prepare(std::string&& client_body, store::CallRecord& rec) {
  if (call_.raw) {
    PassThroughRequest& raw = *call_.raw;
    wants_ = raw.wants;
    client_wants_usage_ = raw.client_wants_usage;
    rec.model = std::move(raw.model);
    // The store keeps the request as its bytes and the upstream request as
    // the few fields that differ.
    rec.upstream_request_patch_text = std::move(raw.upstream_patch);
    rec.request_text = std::move(client_body);
    body_ = {std::string_view(rec.request_text).substr(raw.kept_from, raw.kept), raw.added};
    return;
  }
  Json body = std::move(call_.chat.body);
  wants_ = AddCaptureFields(body, call_.route.completions());
  if (call_.chat.stream) {
    body["stream"] = true;
    // Usage for the record; stripped from what the client gets when it did
    // not ask (chat clients; the other formats always carry usage in their
    // own end events).
    if (!body.contains("stream_options")) body["stream_options"] = {{"include_usage", true}};
  }
  rec.model = JsonText(body, "model");
  // Its text is both what goes upstream and the record's (the store's
  // writer slices it into parts as it does a request's bytes).
  rec.upstream_request_text = DumpJson(body);
  body_ = rec.upstream_request_text;
  // The request as the harness sent it: its bytes, which go into the call
  // log while the upstream works (as a pass-through call's do), so the
  // call's own record, written before its last bytes, does not carry them.
  rec.request_text = std::move(client_body);
}

RequestHead OpenAIUpstream::Head(const Upstream& u) const {
  RequestHead up(u.base_path + std::string(call_.route.upstream_path));
  up.Set("Host", u.host + ":" + u.port);
  up.Set("Content-Type", "application/json");
  // (A body forwarded as it arrives is sent before it says whether it streams.)
  up.Set("Accept", cut_through_ ? "application/json, text/event-stream"
                   : call_.chat.stream ? "text/event-stream" : "application/json");
  if (!services_.pool.api_key().empty()) up.Set("Authorization", "Bearer " + services_.pool.api_key());
  return up;
}

Task<Outcome> OpenAIUpstream::Relay(UpstreamAnswer& answer, ClientStream& client, store::CallRecord& rec) {
  auto& head = answer.parser->get();
  int status = head.result_int();
  if (status >= 400) {
    // The upstream's status and retry headers, in the client's own error shape.
    std::string error_text;
    co_await AppendWholeUpstreamBody(answer, error_text);
    co_return Outcome::Failed(status, UpstreamErrorMessage(status, error_text), RetryHeaders(head));
  }
  if (!call_.chat.stream) co_return co_await RelayWhole(answer, rec);
  std::string content_type(head[http::field::content_type]);
  if (content_type.find("text/event-stream") == std::string::npos) {
    co_return Outcome::Failed(502, "upstream answered a stream request with " + content_type + ", not SSE");
  }
  co_return co_await RelayStream(answer, client, rec);
}

Task<Outcome> OpenAIUpstream::RelayWhole(UpstreamAnswer& answer, store::CallRecord& rec) {
  std::string text;
  if (!co_await ReadWholeAnswer(answer, services_.pool, text)) {
    co_return Outcome::Failed(answer.FailureStatus(), answer.error);
  }
  rec.first_token_at = NowSeconds();
  const std::string& url = answer.upstream->url;
  co_return call_.raw ? WholeBytes(text, url, rec) : WholeTranslated(text, url, rec);
}

Outcome OpenAIUpstream::WholeBytes(std::string& text, const std::string& url, store::CallRecord& rec) {
  CapturedTokens tokens;
  auto chunk = CaptureAndStrip(text, wants_, false, tokens);
  if (!chunk.ok()) return Outcome::Failed(502, "upstream " + url + " answered with invalid JSON");
  rec.response_text = chunk->text;
  rec.upstream_response_text = chunk->text;
  TakeTokens(rec, tokens);
  rec.finish_reason = chunk->finish_reason;
  rec.usage_text = std::move(chunk->usage);
  if (services_.token_ids.Fails(rec)) return Outcome::Failed(502, kNoTokenIdsMessage);
  return Outcome::Whole(200, std::move(chunk->text));
}

Outcome OpenAIUpstream::WholeTranslated(std::string& text, const std::string& url, store::CallRecord& rec) {
  // The token fields are read and cut from the bytes, as for a stream's
  // chunks: the answer carries every prompt token's id (tens of thousands,
  // ~4 ms to parse into a document), the translation needs none of them.
  CapturedTokens tokens;
  auto stripped = CaptureAndStrip(text, wants_, false, tokens);
  if (!stripped.ok()) return Outcome::Failed(502, "upstream " + url + " answered with invalid JSON");
  if (stripped->is_error) {
    return Outcome::Failed(502, "upstream " + url + " answered 200 with an error: " + stripped->text);
  }
  Json response = ParseJsonOrDiscarded(stripped->text);
  auto out = call_.format->FromChat(response);
  if (!out.ok()) return Outcome::Failed(502, "cannot translate the upstream response: " + out.status().message());
  rec.upstream_response = response;
  rec.response = *out;
  TakeTokens(rec, tokens);
  rec.finish_reason = FinishReasonOf(response);
  rec.usage = response.value("usage", Json());
  if (services_.token_ids.Fails(rec)) return Outcome::Failed(502, kNoTokenIdsMessage);
  return Outcome::Whole(200, DumpJson(*out), std::move(response));
}

Task<Outcome> OpenAIUpstream::RelayStream(UpstreamAnswer& answer, ClientStream& cs, store::CallRecord& rec) {
  StreamRelay s(call_.format->NewStream(), answer.upstream->url, rec);
  // What the upstream has sent by the time of a read is relayed in one
  // write: an unpaced upstream's whole answer, mostly. (Not zeroed: only
  // the bytes a read brings are touched, so a slow stream stays small.)
  constexpr size_t kStreamReadBytes = 64 * 1024;
  std::unique_ptr<char[]> buf(new char[kStreamReadBytes]);
  if (answer.conn->buffer.capacity() < kStreamReadBytes) answer.conn->buffer.reserve(kStreamReadBytes);
  auto& parser = *answer.parser;
  while (!parser.is_done() && !s.saw_done) {
    beast::error_code ec;
    parser.get().body().data = buf.get();
    parser.get().body().size = kStreamReadBytes;
    co_await ReadHttp(answer.conn->stream, answer.conn->buffer, parser, ReadUntil::kSome, ec);
    if (ec == http::error::need_buffer) ec = {};
    std::string out;
    if (!RelayEvents(s, std::string_view(buf.get(), kStreamReadBytes - parser.get().body().size), out)) break;
    if (!out.empty()) {
      if (!cs.call_started_writing) co_await StopKeepAlive(cs);
      if (s.saw_done && !ec) {
        // The stream's last read: its events go out with the stream's end,
        // in one write once the call is recorded (an unpaced upstream's
        // whole answer, mostly), not in a write of their own before it.
        DeferSseBytes(cs, std::move(out));
        continue;
      }
      co_await WriteSseBytes(cs, std::move(out), false);
      if (cs.failed) {
        s.error = "the client closed the connection mid-stream";
        break;
      }
    }
    if (ec) {
      s.error = MidStreamError(ec, s.url, cs.failed, s.upstream_broke);
      break;
    }
  }
  if (s.error.empty() && !s.saw_done) {
    s.error = "upstream " + s.url + " ended the stream without [DONE]";
    s.upstream_broke = true;
  }
  if (!cs.call_started_writing) co_await StopKeepAlive(cs);
  co_return EndStream(s, answer, cs.failed);
}

// What a read brought: its events relayed into out; false: the stream ends.
bool OpenAIUpstream::RelayEvents(StreamRelay& s, std::string_view bytes, std::string& out) {
  s.events.clear();
  if (!s.sse.Feed(bytes, s.events)) {
    s.error = "upstream " + s.url + " sent an SSE line longer than 64 MiB";
    s.upstream_broke = true;
    return false;
  }
  for (const SseEvent& event : s.events) {
    if (event.data == "[DONE]") {
      s.saw_done = true;
      return true;
    }
    bool go_on = call_.raw ? RelayBytesEvent(s, event, out) : RelayTranslatedEvent(s, event, out);
    if (!go_on) return false;
  }
  return true;
}

// One event of a pass-through stream; false: the stream ends here (an error).
bool OpenAIUpstream::RelayBytesEvent(StreamRelay& s, const SseEvent& event, std::string& out) {
  // Most chunks are a piece of content: relayed from one walk over their
  // bytes (stream_relay.h), the rest the full way. (After a held final
  // chunk, the full way too: what it holds goes out only before a chunk that
  // is not final.)
  if (s.held.empty() &&
      RelayContentChunk(event.data, wants_, !client_wants_usage_, s.tokens, s.upstream_assembled, out)) {
    s.FirstToken();
    return true;
  }
  auto chunk = CaptureAndStrip(event.data, wants_, !client_wants_usage_, s.tokens);
  if (!chunk.ok()) {
    RelayMalformed(s, event.data, out);
    return true;
  }
  if (chunk->is_error) {
    s.error = "upstream " + s.url + " error: " + chunk->text;
    return false;
  }
  s.FirstToken();
  if (!chunk->usage.empty()) s.usage = Json::parse(chunk->usage, nullptr, false);
  if (chunk->usage_only && !client_wants_usage_) return true;
  if (!s.upstream_assembled.AddContentDelta(chunk->text)) s.upstream_assembled.Add(ParseJsonOrDiscarded(chunk->text));
  std::string& target = chunk->final ? s.held : out;
  if (!chunk->final) {
    out += s.held;
    s.held.clear();
  }
  target += "data: ";
  target += chunk->text;
  target += "\n\n";
  return true;
}

// One event of a translated stream; false: the stream ends here (an error).
bool OpenAIUpstream::RelayTranslatedEvent(StreamRelay& s, const SseEvent& event, std::string& out) {
  // Token ids and logprobs are read and cut from the bytes, so the document
  // the translation needs is parsed from the smaller chunk.
  auto stripped = CaptureAndStrip(event.data, wants_, false, s.tokens);
  if (!stripped.ok()) {
    RelayMalformed(s, event.data, out);
    return true;
  }
  if (stripped->is_error) {
    s.error = "upstream " + s.url + " error: " + Json::parse(stripped->text, nullptr, false).dump();
    return false;
  }
  s.FirstToken();
  // Most chunks are a piece of content: the translator takes the text alone.
  std::string content_bytes;
  auto piece = ReadContentDelta(stripped->text);
  if (auto content = piece ? ContentDeltaText(*piece) : std::nullopt;
      content && s.translator->OnContentDelta(*content, content_bytes)) {
    if (!s.upstream_assembled.AddContentDelta(*piece)) s.upstream_assembled.Add(ParseJsonOrDiscarded(stripped->text));
    s.Emit(false, content_bytes, out);
    return true;
  }
  Json chunk = ParseJsonOrDiscarded(stripped->text);
  if (chunk.contains("usage") && !chunk["usage"].is_null()) s.usage = chunk["usage"];
  if (!call_.route.passes_through()) s.upstream_assembled.Add(chunk);
  bool usage_only = chunk.contains("choices") && chunk["choices"].is_array() && chunk["choices"].empty();
  if (usage_only && !client_wants_usage_) return true;
  if (!client_wants_usage_ && chunk.contains("usage")) chunk.erase("usage");
  std::string bytes = s.translator->OnChunk(chunk);
  s.Emit(IsFinalChunk(chunk), bytes, out);
  return true;
}

void OpenAIUpstream::RelayMalformed(StreamRelay& s, const std::string& data, std::string& out) {
  if (s.malformed_note.empty()) {
    s.malformed_note = "upstream " + s.url +
                       " sent an event that is not JSON (relayed to the client as sent; the recorded tokens end "
                       "before it)";
    s.tokens_before_malformed = std::move(s.tokens);
    s.tokens = CapturedTokens();
  }
  s.Emit(false, call_.raw ? "data: " + data + "\n\n" : s.translator->OnMalformed(data), out);
}

// Fills the record from a relayed stream; returns the chat response the
// format's Finished reads (null for the pass-through formats, which do not).
Json OpenAIUpstream::RecordStream(StreamRelay& s) {
  store::CallRecord& rec = s.rec;
  const bool pass_through = call_.route.passes_through();
  if (call_.raw) {
    // Recorded as text: a stream's logprobs (an object per token) are never
    // made a document. The upstream's answer differs only by its usage.
    std::tie(rec.response_text, rec.upstream_response_text) = s.upstream_assembled.ResultTexts(s.usage);
    rec.finish_reason = s.upstream_assembled.FinishReason();
  } else {
    rec.response = s.translator->Assembled();
    rec.upstream_response = pass_through ? rec.response : s.upstream_assembled.Result();
    if (!s.usage.is_null()) rec.upstream_response["usage"] = s.usage;
    rec.finish_reason = FinishReasonOf(rec.upstream_response);
  }
  Json upstream_response = pass_through ? Json() : rec.upstream_response;
  if (!s.malformed_note.empty()) s.tokens = std::move(s.tokens_before_malformed);
  TakeTokens(rec, s.tokens);
  rec.usage = s.usage;
  return upstream_response;
}

Outcome OpenAIUpstream::EndStream(StreamRelay& s, UpstreamAnswer& answer, bool client_gone) {
  Json upstream_response = RecordStream(s);
  if (s.error.empty() && services_.token_ids.Fails(s.rec) && s.malformed_note.empty()) s.error = kNoTokenIdsMessage;
  if (!s.error.empty()) {
    Outcome failed = Outcome::Failed(client_gone ? kClientHungUpStatus : 502, s.error);
    if (client_gone) return failed;
    if (s.upstream_broke) {
      // As the upstream's did, the client's connection breaks after what was
      // sent (no clean end): harnesses retry a broken stream, not an error event.
      failed.reply = Outcome::Reply::kBreak;
      failed.body = std::move(s.held);
    } else {
      failed.reply = Outcome::Reply::kStreamError;
      failed.body = s.held + s.translator->OnError(WithoutAddresses(s.error, services_.urls));
    }
    return failed;
  }
  if (answer.parser->is_done() && answer.parser->get().keep_alive()) {
    services_.pool.Release(*answer.upstream, std::move(answer.conn));
  }
  Outcome ended = Outcome::StreamEnd(std::move(s.held), std::move(s.translator));
  if (!s.malformed_note.empty()) {
    // The client's stream ends as the upstream's did; the record is a failed
    // call whose tokens stop before the broken event (as a cut stream's do).
    ended.status = 502;
    ended.error = s.malformed_note;
  } else if (!upstream_response.is_null()) {
    ended.finished = std::move(upstream_response);
  }
  return ended;
}

}  // namespace

std::unique_ptr<UpstreamApi> NewOpenAIUpstream(DecodedCall& call, bool cut_through, const UpstreamServices& services) {
  return std::make_unique<OpenAIUpstream>(call, cut_through, services);
}

}  // namespace forge::proxy
