// Pieces every client-format translator shares: reading a client body with
// errors that name the field, writing SSE frames, assembling a whole chat
// response from its stream chunks, and telling side calls from agent turns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/json_field.h"
#include "proxy/client_format.h"

namespace forge::proxy::wire {

// Thrown inside a translator when the client body is malformed; ToChat
// catches it at its boundary and returns Status::InvalidData(message). Keeping
// it internal lets the field-by-field code read straight down.
struct BadField {
  std::string message;
};
[[noreturn]] void Fail(const std::string& path, const std::string& what);

// Typed access that names the field ("messages[2].content[0].text") on error.
const Json* Find(const Json& object, const char* key);  // null when absent or null
// The choice with index 0 of a chat response or chunk: the only one the
// translators carry to the client. Null when there is none.
const Json* FirstChoice(const Json& chat);
const Json& Require(const Json& object, const char* key, const std::string& path);
std::string RequireString(const Json& object, const char* key, const std::string& path);
const Json& RequireArray(const Json& object, const char* key, const std::string& path);
std::string OptString(const Json& object, const char* key, const std::string& path,
                      const std::string& fallback = "");
bool OptBool(const Json& object, const char* key, const std::string& path, bool fallback);
// Copies a number field when present; a non-number is an error.
void CopyNumber(const Json& from, const char* key, Json& to, const char* to_key,
                const std::string& path);
std::string Path(const std::string& parent, const char* key);
std::string Path(const std::string& parent, size_t index);

// Calls each(item, item_path, type) for every item of `items`, an array of
// objects that each carry a string "type" (Anthropic's content blocks,
// Responses' content parts); an item that is not an object fails as "must
// be a NOUN", one without a string type as RequireString does.
template <typename Each>
void ForEachTyped(const Json& items, const std::string& path, const char* noun, Each&& each) {
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& item = items[i];
    const std::string at = Path(path, i);
    if (!item.is_object()) Fail(at, std::string("must be a ") + noun);
    each(item, at, RequireString(item, "type", at));
  }
}

// Runs a translation body, turning BadField and nlohmann type errors into InvalidData.
template <typename F>
auto Guard(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const BadField& bad) {
    return Status::InvalidData(bad.message);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidData(std::string("malformed request: ") + e.what());
  }
}

// The same for an upstream chat response that breaks the chat schema: Protocol.
template <typename F>
auto GuardUpstream(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const BadField& bad) {
    return Status::Protocol("upstream chat response: " + bad.message);
  } catch (const nlohmann::json::exception& e) {
    return Status::Protocol(std::string("upstream chat response: ") + e.what());
  }
}

// The first choice's message of a chat.completion, checked.
const Json& ChatMessage(const Json& chat_response);

// "event: <name>\ndata: <json>\n\n"; no event line when name is empty.
std::string SseFrame(std::string_view event, const Json& data);

// Ids the proxy makes. Derived from the upstream id so that the streamed and
// the unstreamed translation of the same completion agree byte for byte.
std::string DerivedId(std::string_view prefix, std::string_view upstream_id);

// The text of a chat message content (string, or an array of text parts).
std::string ContentText(const Json& content);

// A rough prompt size for count-tokens side calls answered without asking the
// upstream: ~4 bytes of JSON text per token, never zero.
int64_t EstimateTokens(const Json& chat_body);

// A helper call, not an agent turn: no tools, and either a one-token probe or a
// system/first-user text of a known title/topic/summary generator, or a JSON
// classifier (Gemini CLI's model router). Kept out of the policy trajectory.
// The rule reads only these signs, so a chat body kept as bytes (the
// pass-through) is judged without parsing its conversation.
struct SideCallSigns {
  bool offers_tools = false;
  bool max_tokens_at_most_one = false;  // max_tokens or max_completion_tokens
  bool structured_output = false;       // a response_format other than text
  std::string probe;                    // system/developer texts, then the first user text
};
// How much of the probe text the rule reads.
inline constexpr size_t kSideCallProbeBytes = 4096;
bool IsSideCall(const SideCallSigns& signs);
SideCallSigns SideCallSignsOf(const Json& chat_body);
inline bool LooksLikeSideCall(const Json& chat_body) { return IsSideCall(SideCallSignsOf(chat_body)); }

// Builds the non-streamed chat.completion from its chunks, exactly as the
// upstream would have answered with stream:false.
class ChatAccumulator {
 public:
  void Add(const Json& chunk);
  // What Add does with a started stream's chunk that holds only this content.
  void AddContent(std::string_view text) {
    content_ += text;
    has_content_ = true;
  }
  bool started() const { return started_; }
  Json Response() const;
  const std::string& id() const { return id_; }
  const std::string& model() const { return model_; }
  int64_t created() const { return created_; }
  // Prompt size when the upstream told us (usage, or vLLM's prompt_token_ids).
  int64_t prompt_tokens() const { return prompt_tokens_; }

 private:
  bool started_ = false;
  std::string id_, model_;
  int64_t created_ = 0;
  int64_t prompt_tokens_ = -1;
  std::string content_, reasoning_;
  bool has_content_ = false, has_reasoning_ = false;
  Json tool_calls_ = Json::array();
  Json finish_reason_;
  Json stop_reason_;
  Json usage_;
};

// Reasoning text of a chat delta or message: vLLM names it reasoning_content
// (older) or reasoning (newer).
const Json* ReasoningField(const Json& delta_or_message);

}  // namespace forge::proxy::wire
