#include "proxy/stream_relay.h"

#include <cstdint>
#include <cstring>

#include "base/json_scan.h"
#include "proxy/pass_through.h"

namespace forge::proxy {
namespace {

using forge::JsonMember;
using forge::JsonMembers;

// The members the common chunk may have, at each level, as bits (a second
// of one sends the chunk the full way: the last of duplicates counts there).
enum TopKey : unsigned { kId = 1, kObject = 2, kCreated = 4, kModel = 8, kFingerprint = 16, kUsage = 32, kChoices = 64 };
enum ChoiceKey : unsigned { kIndex = 1, kDelta = 2, kLogprobs = 4, kFinish = 8, kStop = 16, kTokenIds = 32 };

// The bit of a key among names (raw keys: one with an escape is none of them), or 0.
template <size_t N>
unsigned KeyBit(std::string_view key, const std::string_view (&names)[N]) {
  for (size_t k = 0; k < N; ++k) {
    if (key == names[k]) return 1u << k;
  }
  return 0;
}
constexpr std::string_view kTopNames[] = {"id", "object", "created", "model", "system_fingerprint", "usage", "choices"};
constexpr std::string_view kChoiceNames[] = {"index", "delta", "logprobs", "finish_reason", "stop_reason", "token_ids"};

// What the walk found: the spans the relay, the capture and the assembly need.
struct Walk {
  JsonMembers top, choice;
  std::string_view choices_value;  // the top-level member's text
  std::string_view element;        // its one element
  ContentDelta delta;
  bool has_usage = false;          // "usage": null
  bool has_token_ids = false;
  bool logprobs_set = false;       // logprobs not null
};

// The top level: head members, usage null, one choice. False for anything else.
bool WalkTop(std::string_view object, const forge::JsonSpans& spans, Walk& w) {
  w.top = forge::ObjectMembers(object, &spans);
  unsigned seen = 0;
  for (const JsonMember& m : w.top) {
    unsigned bit = KeyBit(m.key, kTopNames);
    if (bit == 0 || (seen & bit)) return false;
    seen |= bit;
    switch (bit) {
      case kId: w.delta.head_members |= 1u; break;
      case kCreated: w.delta.head_members |= 2u; break;
      case kModel: w.delta.head_members |= 4u; break;
      case kFingerprint: w.delta.head_members |= 8u; break;
      case kObject:
        if (!forge::IsJsonString(m.value) || m.value.find('\\') != std::string_view::npos ||
            m.value == "\"text_completion\"") {
          return false;
        }
        break;
      case kUsage:
        if (!forge::IsJsonNull(m.value)) return false;
        w.has_usage = true;
        break;
      case kChoices:
        w.choices_value = m.value;
        break;
    }
  }
  if (!forge::IsJsonArray(w.choices_value)) return false;
  auto elements = forge::ArrayElements(w.choices_value, &spans);
  if (elements.size() != 1 || !forge::IsJsonObject(elements[0])) return false;
  w.element = elements[0];
  return true;
}

// The one choice: an index, a delta of at most content, no finish. False for anything else.
bool WalkChoice(const forge::JsonSpans& spans, const CaptureWants& wants, Walk& w) {
  w.choice = forge::ObjectMembers(w.element, &spans);
  unsigned seen = 0;
  std::string_view delta;
  for (const JsonMember& m : w.choice) {
    unsigned bit = KeyBit(m.key, kChoiceNames);
    if (bit == 0 || (seen & bit)) return false;
    seen |= bit;
    if (bit == kIndex) {
      std::optional<int64_t> i = forge::JsonInteger(m.value);
      if (!i || *i < INT32_MIN || *i > INT32_MAX) return false;
      w.delta.index = static_cast<int>(*i);
    } else if (bit == kDelta) {
      delta = m.value;
    } else if (bit == kFinish || bit == kStop) {
      if (!forge::IsJsonNull(m.value)) return false;
    } else if (bit == kTokenIds) {
      if (!forge::IsJsonArray(m.value)) return false;
      w.has_token_ids = true;
    } else if (bit == kLogprobs && !forge::IsJsonNull(m.value)) {
      w.logprobs_set = true;
      if (!forge::IsJsonObject(m.value)) return false;
      if (wants.logprobs) {  // kept, so assembled: {"content": [...]} only
        JsonMembers fields = forge::ObjectMembers(m.value, &spans);
        if (fields.size() != 1 || fields[0].key != "content" || !forge::IsJsonArray(fields[0].value)) return false;
        w.delta.logprobs_content = fields[0].value;
      }
    }
  }
  if (!forge::IsJsonObject(delta)) return false;
  for (const JsonMember& m : forge::ObjectMembers(delta, &spans)) {
    if (m.key != "content" || !w.delta.content.empty()) return false;
    if (!forge::IsJsonString(m.value) && !forge::IsJsonNull(m.value)) return false;
    w.delta.content = m.value;
  }
  return true;
}

void AppendMember(std::string& out, bool& first, std::string_view raw_key, std::string_view value) {
  if (!first) out += ',';
  first = false;
  out += '"';
  out += raw_key;
  out += "\":";
  out += value;
}

// The chunk as CaptureAndStrip writes it: as sent when nothing is cut, else
// each object with a cut member rebuilt compactly (JsonObjectWriter's form).
void AppendRelayed(std::string_view object, const CaptureWants& wants, bool drop_usage, const Walk& w,
                   std::string& out) {
  bool edit_choice = (!wants.token_ids && w.has_token_ids) || (!wants.logprobs && w.logprobs_set);
  bool edit_top = edit_choice || (drop_usage && w.has_usage);
  out += "data: ";
  if (!edit_top) {
    out += object;
    out += "\n\n";
    return;
  }
  out += '{';
  bool first = true;
  for (const JsonMember& m : w.top) {
    if (drop_usage && m.key == "usage") continue;
    if (m.key != "choices" || !edit_choice) {
      AppendMember(out, first, m.key, m.value);
      continue;
    }
    AppendMember(out, first, m.key, "[{");
    bool first_in_choice = true;
    for (const JsonMember& c : w.choice) {
      if (!wants.token_ids && c.key == "token_ids") continue;
      bool nulled = !wants.logprobs && c.key == "logprobs";
      AppendMember(out, first_in_choice, c.key, nulled ? std::string_view("null") : c.value);
    }
    out += "}]";
  }
  out += "}\n\n";
}

}  // namespace

bool RelayContentChunk(std::string_view data, const CaptureWants& wants, bool drop_usage, CapturedTokens& tokens,
                       ChatAssembler& assembled, std::string& out) {
  // Cheap signs of a chunk this is not for, before any scan.
  // (A NUL byte ends the input for a parser: the full way's question.)
  if (data.size() < 2 || data.front() != '{' || data.back() != '}' ||
      std::memchr(data.data(), '\0', data.size()) != nullptr) {
    return false;
  }
  thread_local forge::JsonSpans spans;
  if (forge::JsonSyntaxError(data, &spans, forge::kMaxJsonDepthCeiling)) return false;
  Walk w;
  if (!WalkTop(data, spans, w) || !WalkChoice(spans, wants, w)) return false;
  // The assembler says last whether it takes the chunk (it may not, e.g.
  // before the stream's first chunk); nothing has changed until then.
  if (!assembled.AddContentDelta(w.delta)) return false;
  if (w.delta.index == 0) HarvestChoiceTokens(w.choice, spans, tokens);
  AppendRelayed(data, wants, drop_usage, w, out);
  return true;
}

}  // namespace forge::proxy
