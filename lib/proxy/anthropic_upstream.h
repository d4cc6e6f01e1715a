// An Anthropic-format upstream (a hosted teacher API that speaks Messages,
// --upstream-api anthropic): the proxy passes /v1/messages and
// /v1/messages/count_tokens through untranslated — the client's body byte
// for byte, its anthropic-version / anthropic-beta headers, the proxy's own
// key as x-api-key — and relays the answer event by event, recording the
// assembled message. No token ids exist on this path: a hosted API does not
// return them, so these calls are teacher data (SFT), not RL samples.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "proxy/sse.h"

namespace forge::proxy {

// Sent when the client names no anthropic-version (the API requires one).
inline constexpr const char* kDefaultAnthropicVersion = "2023-06-01";

// Rebuilds the Messages response from its stream, as the Anthropic SDK's
// MessageStream does, for the record.
class AnthropicMessageAssembler {
 public:
  void Add(std::string_view event, const nlohmann::json& data);
  nlohmann::json Result() const;
  // The error an `event: error` carried, or "".
  const std::string& error() const { return error_; }
  bool stopped() const { return stopped_; }  // message_stop seen

 private:
  nlohmann::json message_ = nlohmann::json::object();
  std::map<size_t, std::string> partial_json_;  // tool_use input, by block index
  std::string error_;
  bool stopped_ = false;
};

// A stream from an Anthropic-format upstream as it is relayed: each event
// as it came, message_stop held until the call is committed.
struct AnthropicRelay {
  AnthropicMessageAssembler assembled;
  SseParser sse;
  SseEvents events;
  std::string held;
  std::string error;
  bool upstream_broke = false;  // its connection broke or went silent mid-answer
  // An event that is not JSON is relayed as sent and the stream goes on (as
  // a translated call's is); the record says so.
  std::string malformed_note;
};

}  // namespace forge::proxy
