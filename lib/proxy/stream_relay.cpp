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
  ContentDelta delta;
  bool has_choices = false;
  bool has_usage = false;          // "usage": null
  bool has_token_ids = false;
  bool logprobs_set = false;       // logprobs not null
};

// One pass over a chunk that validates it (JsonSyntaxError's rules) and
// walks it at once: the chunk's own levels (the object, "choices", its one
// choice, the delta) are read here, each other value checked where it
// stands (JsonValueEnd). Anything a chunk of this shape may not have (a
// member not named below, a second of one, a key with an escape, a second
// choice, a finish, a delta member other than content) ends the pass, as
// does anything not valid: the caller then takes the full way, which says
// why. The depth limit of a value inside is the ceiling less the levels
// around it.
class ChunkWalker {
 public:
  ChunkWalker(std::string_view text, forge::JsonSpans& spans, const CaptureWants& wants, Walk& w)
      : s_(text), spans_(spans), wants_(wants), w_(w) {}

  bool Run() {
    spans_.Clear();
    if (!Object(1, [&](std::string_view key, unsigned& seen) { return TopMember(key, seen); })) return false;
    return i_ == s_.size();  // (the caller saw that the text ends with the object's '}')
  }

 private:
  static bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  void SkipSpace() {
    while (i_ < s_.size() && IsSpace(s_[i_])) ++i_;
  }
  bool At(char c) const { return i_ < s_.size() && s_[i_] == c; }

  // An object at i_ whose members member reads (with the key, raw, and the
  // bits of the keys seen so far; i_ at the value), then past its '}'. At
  // least one member.
  template <typename Member>
  bool Object(int depth, Member member) {
    depth_ = depth;
    if (!At('{')) return false;
    ++i_;
    unsigned seen = 0;
    for (;;) {
      SkipSpace();
      if (!At('"')) return false;
      size_t close = s_.find('"', i_ + 1);
      if (close == std::string_view::npos) return false;
      std::string_view key = s_.substr(i_ + 1, close - i_ - 1);
      if (key.find('\\') != std::string_view::npos) return false;  // (a raw key: none of the names)
      i_ = close + 1;
      SkipSpace();
      if (!At(':')) return false;
      ++i_;
      SkipSpace();
      if (!member(key, seen)) return false;
      SkipSpace();
      if (At(',')) {
        ++i_;
        continue;
      }
      if (!At('}')) return false;
      ++i_;
      return true;
    }
  }

  // The value at i_, checked, and its text.
  bool Value(std::string_view& value) {
    size_t start = i_;
    std::optional<size_t> end = forge::JsonValueEnd(s_, i_, &spans_, forge::kMaxJsonDepthCeiling - depth_);
    if (!end) return false;
    i_ = *end;
    value = s_.substr(start, i_ - start);
    return true;
  }
  bool Null(std::string_view& value) {
    if (s_.compare(i_, 4, "null") != 0) return false;
    value = s_.substr(i_, 4);
    i_ += 4;
    return true;
  }
  bool String(std::string_view& value) {
    size_t start = i_;
    std::optional<size_t> end = forge::JsonStringValidEnd(s_, i_);
    if (!end) return false;
    i_ = *end;
    value = s_.substr(start, i_ - start);
    return true;
  }

  template <size_t N>
  static unsigned Bit(std::string_view key, const std::string_view (&names)[N], unsigned& seen) {
    unsigned bit = KeyBit(key, names);
    if (bit == 0 || (seen & bit)) return 0;
    seen |= bit;
    return bit;
  }

  bool TopMember(std::string_view key, unsigned& seen) {
    unsigned bit = Bit(key, kTopNames, seen);
    std::string_view value;
    switch (bit) {
      case 0: return false;
      case kObject:
        if (!String(value) || value.find('\\') != std::string_view::npos || value == "\"text_completion\"") {
          return false;
        }
        break;
      case kUsage:
        if (!Null(value)) return false;
        w_.has_usage = true;
        break;
      case kChoices:
        if (!Choices(value)) return false;
        w_.has_choices = true;
        break;
      default:  // the head's: any value
        w_.delta.head_members |= bit == kId ? 1u : bit == kCreated ? 2u : bit == kModel ? 4u : 8u;
        if (!Value(value)) return false;
    }
    w_.top.push_back({key, value});
    return true;
  }

  // "choices": [one choice]
  bool Choices(std::string_view& value) {
    size_t start = i_;
    if (!At('[')) return false;
    ++i_;
    SkipSpace();
    if (!Object(3, [&](std::string_view key, unsigned& seen) { return ChoiceMember(key, seen); })) return false;
    if (!(choice_seen_ & kDelta)) return false;
    depth_ = 1;
    SkipSpace();
    if (!At(']')) return false;
    ++i_;
    value = s_.substr(start, i_ - start);
    return true;
  }

  bool ChoiceMember(std::string_view key, unsigned& seen) {
    unsigned bit = Bit(key, kChoiceNames, seen);
    choice_seen_ = seen;
    std::string_view value;
    switch (bit) {
      case 0: return false;
      case kIndex: {
        if (!Value(value)) return false;
        std::optional<int64_t> index = forge::JsonInteger(value);
        if (!index || *index < INT32_MIN || *index > INT32_MAX) return false;
        w_.delta.index = static_cast<int>(*index);
        break;
      }
      case kDelta:
        if (!Delta(value)) return false;
        break;
      case kFinish:
      case kStop:
        if (!Null(value)) return false;
        break;
      case kTokenIds:
        if (!At('[') || !Value(value)) return false;
        w_.has_token_ids = true;
        break;
      case kLogprobs:
        if (Null(value)) break;
        if (!At('{')) return false;
        w_.logprobs_set = true;
        if (!(wants_.logprobs ? KeptLogprobs(value) : Value(value))) return false;
        break;
    }
    w_.choice.push_back({key, value});
    return true;
  }

  // "delta": {} or {"content": a string or null}
  bool Delta(std::string_view& value) {
    size_t start = i_;
    if (!At('{')) return false;
    ++i_;
    SkipSpace();
    if (!At('}')) {
      if (s_.compare(i_, 9, "\"content\"") != 0) return false;
      i_ += 9;
      SkipSpace();
      if (!At(':')) return false;
      ++i_;
      SkipSpace();
      if (!(At('"') ? String(w_.delta.content) : Null(w_.delta.content))) return false;
      SkipSpace();
      if (!At('}')) return false;
    }
    ++i_;
    value = s_.substr(start, i_ - start);
    return true;
  }

  // Kept, so assembled: {"content": [...]} only.
  bool KeptLogprobs(std::string_view& value) {
    size_t start = i_;
    ++i_;  // '{'
    SkipSpace();
    if (s_.compare(i_, 9, "\"content\"") != 0) return false;
    i_ += 9;
    SkipSpace();
    if (!At(':')) return false;
    ++i_;
    SkipSpace();
    depth_ = 4;
    bool array = At('[') && Value(w_.delta.logprobs_content);
    depth_ = 3;
    if (!array) return false;
    SkipSpace();
    if (!At('}')) return false;
    ++i_;
    value = s_.substr(start, i_ - start);
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;  // the objects and arrays around the value at i_
  unsigned choice_seen_ = 0;
  forge::JsonSpans& spans_;
  const CaptureWants& wants_;
  Walk& w_;
};

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
  Walk w;
  if (!ChunkWalker(data, spans, wants, w).Run() || !w.has_choices) return false;
  // The assembler says last whether it takes the chunk (it may not, e.g.
  // before the stream's first chunk); nothing has changed until then.
  if (!assembled.AddContentDelta(w.delta)) return false;
  if (w.delta.index == 0 && (w.has_token_ids || w.logprobs_set)) HarvestChoiceTokens(w.choice, spans, tokens);
  AppendRelayed(data, wants, drop_usage, w, out);
  return true;
}

}  // namespace forge::proxy
