// A model call's answer (the last stages of Server::HandleCall, call.cpp):
// read from the upstream, its token ids and logprobs captured and cut from
// what the client did not ask for, relayed (streamed event by event, or
// whole), and the call committed to the store before the final bytes go out.
#include <memory>
#include <tuple>

#include "base/json_dump.h"
#include "base/json_field.h"
#include "base/json_parse.h"
#include "proxy/call.h"
#include "proxy/http_read.h"
#include "proxy/pass_through.h"
#include "proxy/ready_io.h"
#include "proxy/stream_relay.h"

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

std::string FinishReasonOf(const Json& response) {
  if (!response.is_object() || !response.contains("choices") || !response["choices"].is_array() ||
      response["choices"].empty()) {
    return "";
  }
  const Json& fr = response["choices"][0].value("finish_reason", Json());
  return fr.is_string() ? fr.get<std::string>() : "";
}

void TakeTokens(store::CallRecord& rec, CapturedTokens& tokens) {
  rec.prompt_ids = std::move(tokens.prompt_ids);
  rec.completion_ids = std::move(tokens.completion_ids);
  rec.logprobs = std::move(tokens.logprobs);
  rec.mm_placeholders = std::move(tokens.mm_placeholders);
}

// Bytes go to the client now (out), or, for a final chunk, are held until the
// call is committed; what was held goes before any chunk that is not final.
void Emit(StreamRelay& s, bool final, std::string_view bytes, std::string& out) {
  if (final) {
    s.held += bytes;
    return;
  }
  out += s.held;
  s.held.clear();
  out += bytes;
}

void RelayMalformed(Call& call, StreamRelay& s, const std::string& data, std::string& out) {
  if (s.malformed_note.empty()) {
    s.malformed_note = "upstream " + call.exchange.upstream->url +
                       " sent an event that is not JSON (relayed to the client as sent; the recorded tokens end "
                       "before it)";
    s.tokens_before_malformed = std::move(s.tokens);
    s.tokens = CapturedTokens();
  }
  Emit(s, false, call.raw ? "data: " + data + "\n\n" : s.translator->OnMalformed(data), out);
}

// One event of a pass-through stream; false: the stream ends here (an error).
bool RelayBytesEvent(Call& call, StreamRelay& s, const SseEvent& event, std::string& out) {
  store::CallRecord& rec = call.rec;
  // Most chunks are a piece of content: relayed from one walk over their
  // bytes (stream_relay.h), the rest the full way. (After a held final
  // chunk, the full way too: what it holds goes out only before a chunk that
  // is not final.)
  if (s.held.empty() &&
      RelayContentChunk(event.data, call.wants, !call.client_wants_usage, s.tokens, s.upstream_assembled, out)) {
    if (rec.first_token_at == 0) rec.first_token_at = NowSeconds();
    return true;
  }
  auto chunk = CaptureAndStrip(event.data, call.wants, !call.client_wants_usage, s.tokens);
  if (!chunk.ok()) {
    RelayMalformed(call, s, event.data, out);
    return true;
  }
  if (chunk->is_error) {
    s.error = "upstream " + call.exchange.upstream->url + " error: " + chunk->text;
    return false;
  }
  if (rec.first_token_at == 0) rec.first_token_at = NowSeconds();
  if (!chunk->usage.empty()) s.usage = Json::parse(chunk->usage, nullptr, false);
  if (chunk->usage_only && !call.client_wants_usage) return true;
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
bool RelayTranslatedEvent(Call& call, StreamRelay& s, const SseEvent& event, std::string& out) {
  // Token ids and logprobs are read and cut from the bytes, so the document
  // the translation needs is parsed from the smaller chunk.
  auto stripped = CaptureAndStrip(event.data, call.wants, false, s.tokens);
  if (!stripped.ok()) {
    RelayMalformed(call, s, event.data, out);
    return true;
  }
  if (stripped->is_error) {
    s.error = "upstream " + call.exchange.upstream->url + " error: " + Json::parse(stripped->text, nullptr, false).dump();
    return false;
  }
  if (call.rec.first_token_at == 0) call.rec.first_token_at = NowSeconds();
  // Most chunks are a piece of content: the translator takes the text alone.
  std::string content_bytes;
  auto piece = ReadContentDelta(stripped->text);
  if (auto content = piece ? ContentDeltaText(*piece) : std::nullopt;
      content && s.translator->OnContentDelta(*content, content_bytes)) {
    if (!s.upstream_assembled.AddContentDelta(*piece)) s.upstream_assembled.Add(ParseJsonOrDiscarded(stripped->text));
    Emit(s, false, content_bytes, out);
    return true;
  }
  Json chunk = ParseJsonOrDiscarded(stripped->text);
  if (chunk.contains("usage") && !chunk["usage"].is_null()) s.usage = chunk["usage"];
  if (!call.pass_through) s.upstream_assembled.Add(chunk);
  bool usage_only = chunk.contains("choices") && chunk["choices"].is_array() && chunk["choices"].empty();
  if (usage_only && !call.client_wants_usage) return true;
  if (!call.client_wants_usage && chunk.contains("usage")) chunk.erase("usage");
  std::string bytes = s.translator->OnChunk(chunk);
  Emit(s, IsFinalChunk(chunk), bytes, out);
  return true;
}

// What a read brought: its events relayed into out; false: the stream ends.
bool RelayEvents(Call& call, StreamRelay& s, std::string_view bytes, std::string& out) {
  s.events.clear();
  if (!s.sse.Feed(bytes, s.events)) {
    s.error = "upstream " + call.exchange.upstream->url + " sent an SSE line longer than 64 MiB";
    s.upstream_broke = true;
    return false;
  }
  for (const SseEvent& event : s.events) {
    if (event.data == "[DONE]") {
      s.saw_done = true;
      return true;
    }
    bool go_on = call.raw ? RelayBytesEvent(call, s, event, out) : RelayTranslatedEvent(call, s, event, out);
    if (!go_on) return false;
  }
  return true;
}

// Fills the record from a relayed stream; returns the chat response the
// format's Finished reads (null for the pass-through formats, which do not).
Json RecordStream(Call& call, StreamRelay& s) {
  store::CallRecord& rec = call.rec;
  if (call.raw) {
    // Recorded as text: a stream's logprobs (an object per token) are never
    // made a document. The upstream's answer differs only by its usage.
    std::tie(rec.response_text, rec.upstream_response_text) = s.upstream_assembled.ResultTexts(s.usage);
    rec.finish_reason = s.upstream_assembled.FinishReason();
  } else {
    rec.response = s.translator->Assembled();
    rec.upstream_response = call.pass_through ? rec.response : s.upstream_assembled.Result();
    if (!s.usage.is_null()) rec.upstream_response["usage"] = s.usage;
    rec.finish_reason = FinishReasonOf(rec.upstream_response);
  }
  Json upstream_response = call.pass_through ? Json() : rec.upstream_response;
  if (!s.malformed_note.empty()) s.tokens = std::move(s.tokens_before_malformed);
  TakeTokens(rec, s.tokens);
  rec.usage = s.usage;
  return upstream_response;
}

}  // namespace

std::string MidStreamError(const beast::error_code& ec, const std::string& upstream_url, ClientStream& cs,
                           bool& upstream_broke) {
  if (ec == ClientHungUp()) {
    cs.failed = true;  // recorded as the client's doing
    return kClientHungUpMessage;
  }
  upstream_broke = true;
  return "upstream " + upstream_url +
         (ec == beast::error::timeout ? " stalled mid-stream: " : " broke off the stream: ") + ec.message();
}

Task<bool> Server::AnswerFromRecording(Call& call) {
  // Nothing goes upstream; the call is recorded again with the recorded token data.
  const RecordedExchange* recorded = replay_->Next(ReplayIndex::RequestKey(call.format->name(), call.client_request));
  if (!recorded) co_return co_await Reject(call, 404, "replay: no recorded response matches this request");
  store::CallRecord& rec = call.rec;
  rec.upstream = "replay:" + config_.replay_path;
  rec.model = recorded->model.empty() ? JsonText(call.chat.body, "model") : recorded->model;
  rec.first_token_at = NowSeconds();
  rec.upstream_request = call.chat.body;
  rec.request = std::move(call.client_request);
  rec.upstream_response = recorded->response;
  rec.prompt_ids = recorded->prompt_ids;
  rec.completion_ids = recorded->completion_ids;
  rec.logprobs = recorded->logprobs;
  rec.finish_reason = FinishReasonOf(recorded->response);
  rec.usage = recorded->response.value("usage", Json());
  std::string bytes;
  if (call.chat.stream) {
    auto translator = call.format->NewStream();
    for (const Json& chunk : ChatResponseToChunks(recorded->response)) bytes += translator->OnChunk(chunk);
    bytes += translator->OnEnd();
    rec.response = translator->Assembled();
  } else {
    auto out = call.format->FromChat(recorded->response);
    if (!out.ok()) co_return co_await Reject(call, 500, "replay: " + out.status().message());
    bytes = DumpJson(*out);
    rec.response = std::move(*out);
  }
  if (!call.chat.stream) co_return co_await CommitWhole(call, bytes, &recorded->response);
  rec.http_status = 200;
  rec.retry_key = std::move(call.retry_key);
  EndRecord(rec, call.t0);
  Status committed = co_await Commit(std::move(rec));
  if (!committed.ok()) co_return co_await Reject(call, 500, "the call could not be recorded: " + committed.message());
  call.format->Finished(call.chat, recorded->response);
  ClientStream cs;
  cs.socket = &call.client;
  cs.version = call.req.version();
  cs.content_type = call.url.stream_content_type;
  co_await WriteSseBytes(cs, std::move(bytes), true);
  co_return !cs.failed;
}

Task<bool> Server::Relay(Call& call) {
  auto& answer = call.exchange.parser->get();
  int status = answer.result_int();
  if (status >= 400) {
    // The upstream's status and retry headers, in the client's own error shape.
    std::string error_text;
    co_await AppendWholeUpstreamBody(call.exchange, error_text);
    co_return co_await FailCall(call, status, UpstreamErrorMessage(status, error_text), RetryHeaders(answer));
  }
  if (!call.chat.stream) co_return co_await RelayWhole(call);
  std::string content_type(answer[http::field::content_type]);
  if (content_type.find("text/event-stream") == std::string::npos) {
    co_return co_await FailCall(call, 502, "upstream answered a stream request with " + content_type + ", not SSE");
  }
  co_return co_await RelayStream(call);
}

Task<bool> Server::RelayWhole(Call& call) {
  UpstreamExchange& exchange = call.exchange;
  std::string text;
  bool read = co_await ReadWholeAnswer(exchange, text);
  if (!read) co_return co_await FailCall(call, exchange.FailureStatus(), exchange.error);
  call.rec.first_token_at = NowSeconds();
  if (call.raw) co_return co_await RelayWholeBytes(call, text);
  co_return co_await RelayWholeTranslated(call, text);
}

Task<bool> Server::RelayWholeBytes(Call& call, std::string& text) {
  store::CallRecord& rec = call.rec;
  CapturedTokens tokens;
  auto chunk = CaptureAndStrip(text, call.wants, false, tokens);
  if (!chunk.ok()) {
    co_return co_await FailCall(call, 502, "upstream " + call.exchange.upstream->url + " answered with invalid JSON");
  }
  rec.response_text = chunk->text;
  rec.upstream_response_text = chunk->text;
  TakeTokens(rec, tokens);
  rec.finish_reason = chunk->finish_reason;
  rec.usage_text = std::move(chunk->usage);
  if (LacksTokenIds(rec)) co_return co_await FailCall(call, 502, kNoTokenIdsMessage);
  co_return co_await CommitWhole(call, chunk->text, nullptr);
}

Task<bool> Server::RelayWholeTranslated(Call& call, std::string& text) {
  store::CallRecord& rec = call.rec;
  const std::string& url = call.exchange.upstream->url;
  // The token fields are read and cut from the bytes, as for a stream's
  // chunks: the answer carries every prompt token's id (tens of thousands,
  // ~4 ms to parse into a document), the translation needs none of them.
  CapturedTokens tokens;
  auto stripped = CaptureAndStrip(text, call.wants, false, tokens);
  if (!stripped.ok()) co_return co_await FailCall(call, 502, "upstream " + url + " answered with invalid JSON");
  if (stripped->is_error) {
    co_return co_await FailCall(call, 502, "upstream " + url + " answered 200 with an error: " + stripped->text);
  }
  Json response = ParseJsonOrDiscarded(stripped->text);
  auto out = call.format->FromChat(response);
  if (!out.ok()) {
    co_return co_await FailCall(call, 502, "cannot translate the upstream response: " + out.status().message());
  }
  rec.upstream_response = response;
  rec.response = *out;
  TakeTokens(rec, tokens);
  rec.finish_reason = FinishReasonOf(response);
  rec.usage = response.value("usage", Json());
  if (LacksTokenIds(rec)) co_return co_await FailCall(call, 502, kNoTokenIdsMessage);
  std::string bytes = DumpJson(*out);
  co_return co_await CommitWhole(call, bytes, &response);
}

// chat_response: what the format's Finished reads (null: nothing to call it with).
Task<bool> Server::CommitWhole(Call& call, std::string& bytes, const Json* chat_response) {
  call.rec.http_status = 200;
  call.rec.retry_key = std::move(call.retry_key);
  EndRecord(call.rec, call.t0);
  Status committed = co_await Commit(std::move(call.rec), call.logged_request);
  if (!committed.ok()) co_return co_await Reject(call, 500, "the call could not be recorded: " + committed.message());
  if (chat_response) call.format->Finished(call.chat, *chat_response);
  co_return co_await Send(call.client, call.req, http::status::ok, std::move(bytes));
}

Task<bool> Server::RelayStream(Call& call) {
  UpstreamExchange& exchange = call.exchange;
  StreamRelay s(call.format->NewStream());
  ClientStream& cs = *call.cs;
  // What the upstream has sent by the time of a read is relayed in one
  // write: an unpaced upstream's whole answer, mostly. (Not zeroed: only
  // the bytes a read brings are touched, so a slow stream stays small.)
  constexpr size_t kStreamReadBytes = 64 * 1024;
  std::unique_ptr<char[]> buf(new char[kStreamReadBytes]);
  if (exchange.conn->buffer.capacity() < kStreamReadBytes) exchange.conn->buffer.reserve(kStreamReadBytes);
  auto& parser = *exchange.parser;
  while (!parser.is_done() && !s.saw_done) {
    beast::error_code ec;
    parser.get().body().data = buf.get();
    parser.get().body().size = kStreamReadBytes;
    co_await ReadHttp(exchange.conn->stream, exchange.conn->buffer, parser, ReadUntil::kSome, ec);
    if (ec == http::error::need_buffer) ec = {};
    std::string out;
    if (!RelayEvents(call, s, std::string_view(buf.get(), kStreamReadBytes - parser.get().body().size), out)) break;
    if (!out.empty()) {
      if (!cs.call_started_writing) co_await StopKeepAlive(cs);
      co_await WriteSseBytes(cs, std::move(out), false);
      if (cs.failed) {
        s.error = "the client closed the connection mid-stream";
        break;
      }
    }
    if (ec) {
      s.error = MidStreamError(ec, exchange.upstream->url, cs, s.upstream_broke);
      break;
    }
  }
  if (s.error.empty() && !s.saw_done) {
    s.error = "upstream " + exchange.upstream->url + " ended the stream without [DONE]";
    s.upstream_broke = true;
  }
  if (!cs.call_started_writing) co_await StopKeepAlive(cs);
  co_return co_await CommitStream(call, s);
}

Task<bool> Server::CommitStream(Call& call, StreamRelay& s) {
  store::CallRecord& rec = call.rec;
  ClientStream& cs = *call.cs;
  const Json upstream_response = RecordStream(call, s);
  if (s.error.empty() && LacksTokenIds(rec) && s.malformed_note.empty()) s.error = kNoTokenIdsMessage;
  if (!s.error.empty()) co_return co_await EndFailedStream(call, s);
  UpstreamExchange& exchange = call.exchange;
  if (exchange.parser->is_done() && exchange.parser->get().keep_alive()) {
    upstreams_.Release(*exchange.upstream, std::move(exchange.conn));
  }
  if (!s.malformed_note.empty()) {
    // The client's stream ends as the upstream's did; the record is a failed
    // call whose tokens stop before the broken event (as a cut stream's do).
    metrics_.upstream_errors.fetch_add(1);
    rec.http_status = 502;
    rec.error = s.malformed_note;
    EndRecord(rec, call.t0);
    co_await Commit(std::move(rec), call.logged_request);
    co_await WriteSseBytes(cs, s.held + s.translator->OnEnd(), true);
    co_return !cs.failed;
  }
  rec.http_status = 200;
  rec.retry_key = std::move(call.retry_key);
  EndRecord(rec, call.t0);
  Status committed = co_await Commit(std::move(rec), call.logged_request);
  if (!committed.ok()) {
    co_await WriteSseBytes(cs, s.translator->OnError("the call could not be recorded: " + committed.message()), true);
    co_return false;
  }
  call.format->Finished(call.chat, upstream_response);
  co_await WriteSseBytes(cs, s.held + s.translator->OnEnd(), true);
  co_return !cs.failed;
}

Task<bool> Server::EndFailedStream(Call& call, StreamRelay& s) {
  store::CallRecord& rec = call.rec;
  ClientStream& cs = *call.cs;
  metrics_.upstream_errors.fetch_add(cs.failed ? 0 : 1);
  rec.http_status = cs.failed ? kClientHungUpStatus : 502;
  rec.error = s.error;
  EndRecord(rec, call.t0);
  co_await Commit(std::move(rec), call.logged_request);
  if (cs.failed) co_return false;
  if (s.upstream_broke) {
    // As the upstream's did, the client's connection breaks after what was
    // sent (no clean end): harnesses retry a broken stream, not an error event.
    if (!s.held.empty()) co_await WriteSseBytes(cs, std::move(s.held), false);
    co_return false;
  }
  co_await WriteSseBytes(cs, s.held + s.translator->OnError(WithoutAddresses(s.error, config_.upstreams)), true);
  co_return false;  // the upstream connection is not reusable; close the client's too
}

}  // namespace forge::proxy
