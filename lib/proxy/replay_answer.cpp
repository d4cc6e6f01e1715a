#include "proxy/replay_answer.h"

#include "base/json_dump.h"
#include "base/json_field.h"
#include "proxy/chat_assembler.h"
#include "proxy/recorder.h"

namespace forge::proxy {

std::optional<Refusal> FindReplayAnswer(ReplayIndex& index, DecodedCall& call, ReplayAnswer& out) {
  out.recorded = index.Next(ReplayIndex::RequestKey(call.format->name(), call.client_request));
  if (!out.recorded) return Refusal{404, "replay: no recorded response matches this request", {}};
  if (call.chat.stream) {
    auto translator = call.format->NewStream();
    for (const Json& chunk : ChatResponseToChunks(out.recorded->response)) out.bytes += translator->OnChunk(chunk);
    out.bytes += translator->OnEnd();
    out.response = translator->Assembled();
    return std::nullopt;
  }
  auto translated = call.format->FromChat(out.recorded->response);
  if (!translated.ok()) return Refusal{500, "replay: " + translated.status().message(), {}};
  out.bytes = DumpJson(*translated);
  out.response = std::move(*translated);
  return std::nullopt;
}

Outcome RecordReplayAnswer(ReplayAnswer&& answer, DecodedCall& call, const std::string& replay_path,
                           store::CallRecord& rec) {
  const RecordedExchange& recorded = *answer.recorded;
  rec.upstream = "replay:" + replay_path;
  rec.model = recorded.model.empty() ? JsonText(call.chat.body, "model") : recorded.model;
  rec.first_token_at = NowSeconds();
  rec.upstream_request = call.chat.body;
  rec.request = std::move(call.client_request);
  rec.upstream_response = recorded.response;
  rec.prompt_ids = recorded.prompt_ids;
  rec.completion_ids = recorded.completion_ids;
  rec.logprobs = recorded.logprobs;
  rec.finish_reason = FinishReasonOf(recorded.response);
  rec.usage = recorded.response.value("usage", Json());
  rec.response = std::move(answer.response);
  // Sent whole, or as a stream's events (no translator: they hold its end).
  Outcome outcome = call.chat.stream ? Outcome::StreamEnd(std::move(answer.bytes), nullptr)
                                     : Outcome::Whole(200, std::move(answer.bytes));
  outcome.finished = recorded.response;
  return outcome;
}

}  // namespace forge::proxy
