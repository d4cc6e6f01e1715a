// A scripted upstream answer, as chat.completion chunks and as the equivalent
// unstreamed chat.completion, for the client-format translator tests; and a
// reader that turns translator output back into (event, JSON) pairs.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "proxy/client_format.h"
#include "proxy/sse.h"

namespace forge::testing {

using proxy::Json;

inline Json Chunk(Json delta, Json finish = nullptr) {
  return {{"id", "chatcmpl-abc123"}, {"object", "chat.completion.chunk"}, {"created", 1700000000},
          {"model", "policy"},
          {"choices", Json::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", finish}}})}};
}

inline Json ToolDelta(int index, Json fields) {
  Json call = {{"index", index}};
  call.update(fields);
  return {{"tool_calls", Json::array({call})}};
}

// Reasoning, two text pieces, one tool call whose arguments arrive in three
// fragments, the finish, and the trailing usage chunk (include_usage).
inline std::vector<Json> ScriptedChunks() {
  return {
      Chunk({{"role", "assistant"}, {"content", ""}}),
      Chunk({{"reasoning_content", "Need a file."}}),
      Chunk({{"content", "Hello"}}),
      Chunk({{"content", " world"}}),
      Chunk(ToolDelta(0, {{"id", "call_1"}, {"type", "function"},
                          {"function", {{"name", "write_file"}, {"arguments", ""}}}})),
      Chunk(ToolDelta(0, {{"function", {{"arguments", "{\"path\": "}}}})),
      Chunk(ToolDelta(0, {{"function", {{"arguments", "\"a.txt\", "}}}})),
      Chunk(ToolDelta(0, {{"function", {{"arguments", "\"text\": \"hi\"}"}}}})),
      Chunk(Json::object(), "tool_calls"),
      {{"id", "chatcmpl-abc123"}, {"object", "chat.completion.chunk"}, {"created", 1700000000},
       {"model", "policy"}, {"choices", Json::array()},
       {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 9}, {"total_tokens", 21}}}},
  };
}

inline Json ScriptedResponse() {
  return {{"id", "chatcmpl-abc123"},
          {"object", "chat.completion"},
          {"created", 1700000000},
          {"model", "policy"},
          {"choices",
           Json::array({{{"index", 0},
                         {"message",
                          {{"role", "assistant"},
                           {"content", "Hello world"},
                           {"reasoning_content", "Need a file."},
                           {"tool_calls",
                            Json::array({{{"id", "call_1"},
                                          {"type", "function"},
                                          {"function",
                                           {{"name", "write_file"},
                                            {"arguments", "{\"path\": \"a.txt\", \"text\": \"hi\"}"}}}}})}}},
                         {"finish_reason", "tool_calls"}}})},
          {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 9}, {"total_tokens", 21}}}};
}

struct Event {
  std::string name;  // the event: line ("" when absent)
  Json data;
};

// Parses SSE bytes; every data line must be JSON.
inline std::vector<Event> ParseEvents(const std::string& bytes) {
  proxy::SseParser parser;
  std::vector<proxy::SseEvent> raw;
  REQUIRE(parser.Feed(bytes, raw));
  CHECK_FALSE(parser.Finish());  // every frame is complete: nothing held back
  std::vector<Event> out;
  for (auto& e : raw) {
    Json data = Json::parse(e.data, nullptr, false);
    REQUIRE_MESSAGE(!data.is_discarded(), e.data);
    out.push_back({e.event, data});
  }
  return out;
}

// The `type` of each event's data.
inline std::vector<std::string> Types(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) out.push_back(e.data.value("type", ""));
  return out;
}

}  // namespace forge::testing
