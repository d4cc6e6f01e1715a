// A call answered from a recording (--replay, replay.h) instead of an
// upstream: the recording is found, and translated to the client's format,
// before the call starts (a miss is refused, nothing recorded); the call is
// recorded again with the recorded token data, as the original was.
#pragma once

#include <optional>
#include <string>

#include "proxy/decode.h"
#include "proxy/outcome.h"
#include "proxy/replay.h"
#include "store/store.h"

namespace forge::proxy {

struct ReplayAnswer {
  const RecordedExchange* recorded = nullptr;
  std::string bytes;  // the client's: a whole body, or the stream's every event and its end
  Json response;      // the client's form (the record's response)
};

// The next recording of call's request, in its client's format; refused when
// none matches (404) or it cannot be translated (500).
std::optional<Refusal> FindReplayAnswer(ReplayIndex& index, DecodedCall& call, ReplayAnswer& out);

// The record of a call answered with answer (upstream "replay:<path>"), and its outcome.
Outcome RecordReplayAnswer(ReplayAnswer&& answer, DecodedCall& call, const std::string& replay_path,
                           store::CallRecord& rec);

}  // namespace forge::proxy
