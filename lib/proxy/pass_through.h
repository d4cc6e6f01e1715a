// OpenAI chat and completions are the upstream's own formats, so for them the
// proxy works on bytes: the upstream request is the client's body with the
// capture fields spliced in, and a response or stream chunk is the
// upstream's bytes with the token fields cut out. Nothing is parsed into a
// document or re-serialised on the way (requests are hundreds of KB; a
// stream is hundreds of chunks), and what the client sees is byte for byte
// what the upstream sent, minus what the proxy added.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "base/json_scan.h"
#include "base/status.h"
#include "proxy/token_capture.h"

namespace forge::proxy {

struct PassThroughRequest {
  bool stream = false;
  // A chat stream carries a usage chunk only when the client asked for it
  // (stream_options.include_usage); the proxy always asks, for the record.
  bool client_wants_usage = true;
  // A harness's helper call (a title, a topic check) rather than a policy
  // turn: the same test as the translated formats (wire::LooksLikeSideCall).
  bool side_call = false;
  CaptureWants wants;
  std::string model;
  // The bytes to send upstream: `kept` bytes of the client's body from
  // `kept_from`, as they are, then `added` (the capture fields and the
  // closing brace), so a large body goes upstream from where it is. When the
  // proxy replaces a member the client set, `added` is the whole body.
  size_t kept_from = 0;
  size_t kept = 0;
  std::string added;
  // Those bytes, joined.
  std::string UpstreamBody(std::string_view client_body) const {
    return std::string(client_body.substr(kept_from, kept)) + added;
  }
  // The upstream request as the store's top-level patch of the client's, as
  // JSON text: {"set": {...}, "unset": []}.
  std::string upstream_patch;
};

// Validates a chat (completions = false) or completions request body — the
// same checks, in the same order and words, as parsing it would make — and
// builds the upstream request. Invalid JSON is InvalidArgument ("request body
// is not valid JSON: ..."); a bad field is InvalidData naming it. Objects and
// arrays nested deeper than max_depth are refused (RequestJsonError's words).
Result<PassThroughRequest> ReadPassThroughRequest(std::string_view body, bool completions,
                                                  int max_depth = forge::kDefaultMaxJsonDepth);

// What a client is told of a request body the validator refused (its words):
// not JSON, or nested too deep for --max-json-depth.
std::string RequestJsonError(const std::string& validator_error);

// One upstream response or stream chunk, with the token fields harvested and cut.
struct PassThroughChunk {
  std::string text;        // what the client gets (compact where edited, else as sent)
  bool is_error = false;   // carries "error" (a failed stream); text is the error's value
  bool final = false;      // no choices, or a finish_reason: hold it until the call is committed
  bool usage_only = false; // "choices": [] — the usage chunk
  std::string usage;       // the usage value's text, if any and not null
  std::string finish_reason;  // choice 0's, if a string
};

// Harvests prompt ids, completion ids and logprobs of choice 0 into tokens,
// then removes what the client did not ask for (ids; logprobs → null; usage
// when drop_usage). body must be valid JSON (an object); Status otherwise.
Result<PassThroughChunk> CaptureAndStrip(std::string_view body, const CaptureWants& wants, bool drop_usage,
                                         CapturedTokens& tokens);

// A chat chunk that carries at most a piece of content for one choice, as
// most chunks of a stream do: no finish, logprobs or usage, no role,
// reasoning or tool calls. Read from its bytes (valid JSON, as
// CaptureAndStrip leaves it), so the chunk needs no document.
struct ContentDelta {
  // The head members a chunk may carry, as bits of head_members.
  static constexpr std::array<const char*, 4> kHeadKeys = {"id", "created", "model", "system_fingerprint"};
  int index = 0;              // the choice's
  std::string_view content;   // delta.content as JSON text: a string, null, or empty when absent
  unsigned head_members = 0;  // bit k: kHeadKeys[k] is present
  bool only_content = true;   // no member besides those above and "object"
  // The choice's logprobs when they are {"content": [...]} (a relayed
  // chunk's, kept for a client that asked): that array's text. Empty when
  // the logprobs are null or absent. (ReadContentDelta never sets it.)
  std::string_view logprobs_content;
};
// nullopt for any other chunk (a completion chunk among them).
std::optional<ContentDelta> ReadContentDelta(std::string_view chunk);

// Choice 0's tokens, read from its members as CaptureAndStrip reads them
// (spans: the validated chunk's).
void HarvestChoiceTokens(const forge::JsonMembers& choice, const forge::JsonSpans& spans, CapturedTokens& into);

// The content of a chunk that is nothing but a piece of content for choice 0
// (delta.content a string, no other member): what a translating format can
// answer without a document. nullopt for any other chunk.
std::optional<std::string> ContentDeltaText(const ContentDelta& delta);
std::optional<std::string> ContentDeltaText(std::string_view chunk);

}  // namespace forge::proxy
