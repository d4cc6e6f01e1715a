// Reading JSON text without building a document. The proxy's hot path only
// needs a few fields of a request or stream chunk, and the requests are big
// (a harness resends its whole conversation every call): it validates the
// bytes once, finds the members it cares about as spans of the text, and
// edits those spans in place instead of parsing and re-serialising the body.
//
// Validation accepts exactly what nlohmann::json::parse accepts (RFC 8259,
// UTF-8 checked, a leading byte-order mark skipped, a NUL byte after the
// value taken as the end of the input), so a body is rejected
// here if and only if the parser would reject it. The span helpers assume
// text that has been validated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

namespace forge {

// Where each object and array of a validated text ends. With them, the
// span helpers below step over a nested value instead of reading it again:
// without, a chunk's innermost values are read once for every level above
// them (the members of the chunk, of its choice, of its logprobs...).
class JsonSpans {
 public:
  // Just past the object or array that starts at open (a pointer into the
  // text these spans were made from); null when none starts there.
  const char* EndOf(const char* open) const;

  // For the validator: containers are opened in text order, so the list stays sorted.
  size_t Open(const char* open) {
    spans_.push_back({open, nullptr});
    return spans_.size() - 1;
  }
  void Close(size_t index, const char* end) { spans_[index].second = end; }
  void Clear() {
    spans_.clear();
    next_ = 0;
  }

 private:
  boost::container::small_vector<std::pair<const char*, const char*>, 32> spans_;
  mutable size_t next_ = 0;  // where EndOf looks first: after the span it found last
};

// How deep objects and arrays may nest in a document the proxy accepts
// (--max-json-depth), and the most that may be set: code that recurses over
// a document (nlohmann's copy, compare and dump; the format translations)
// stays far inside a thread's stack at that depth. Readers of the store read
// any document up to the ceiling, so anything a proxy accepted.
constexpr int kDefaultMaxJsonDepth = 512;
constexpr int kMaxJsonDepthCeiling = 4096;

// Checks that text is one JSON value, surrounding whitespace allowed.
// Returns std::nullopt, or why not and at which byte offset. With spans,
// also notes where each non-empty object and array ends. max_depth > 0:
// objects and arrays nested deeper than that are an error ("nested deeper
// than N levels"); the validator itself takes any depth (no recursion).
std::optional<std::string> JsonSyntaxError(std::string_view text, JsonSpans* spans = nullptr, int max_depth = 0);

// One member of an object, as spans of the validated text.
struct JsonMember {
  std::string_view key;    // raw, between the quotes: escapes not decoded
  std::string_view value;  // the value's text, without surrounding whitespace
  // Compares the decoded key with name (plain text: no JSON escapes).
  bool KeyIs(std::string_view name) const;
};

// Members and elements of one object or array: those of a stream chunk fit
// inline, so reading a chunk allocates nothing (a chunk is read for every
// token a model streams); a long array spills to the heap.
using JsonMembers = boost::container::small_vector<JsonMember, 16>;
using JsonElements = boost::container::small_vector<std::string_view, 8>;

// The value's text without surrounding whitespace (and a leading byte-order mark).
std::string_view TrimJson(std::string_view text);

// The members of the object `object` (valid JSON starting with '{'), in
// order, duplicates included; empty for anything that is not an object.
// spans: those of the validated text object is part of, if at hand.
JsonMembers ObjectMembers(std::string_view object, const JsonSpans* spans = nullptr);
// The elements of the array `array` (valid JSON starting with '['), in order.
JsonElements ArrayElements(std::string_view array, const JsonSpans* spans = nullptr);

// The elements of a validated array that JsonInteger reads, appended to into
// as int32 (token ids) in order; any other element is skipped. One pass over
// the text, without listing the elements first.
void AppendJsonInt32s(std::string_view array, std::vector<int32_t>& into);

// The last member named name (a parser keeps the last of duplicate keys).
const JsonMember* FindMember(const JsonMembers& members, std::string_view name);

// Index just past the string that starts at text[quote] (a '"') of valid text.
size_t JsonStringEnd(std::string_view text, size_t quote);
// The decoded contents of a raw JSON string body (between the quotes).
std::string DecodeJsonString(std::string_view raw);
// The decoded text of a JSON string value (with its quotes); empty for any
// other value.
std::string JsonStringValue(std::string_view value);
// The same, stopping once at least max_bytes are decoded (a prefix of a long
// text costs only its own length).
std::string DecodeJsonStringPrefix(std::string_view raw, size_t max_bytes);

inline bool IsJsonObject(std::string_view v) { return !v.empty() && v.front() == '{'; }
inline bool IsJsonArray(std::string_view v) { return !v.empty() && v.front() == '['; }
inline bool IsJsonString(std::string_view v) { return !v.empty() && v.front() == '"'; }
inline bool IsJsonNull(std::string_view v) { return v == "null"; }
inline bool IsJsonTrue(std::string_view v) { return v == "true"; }
inline bool IsJsonBool(std::string_view v) { return v == "true" || v == "false"; }
// An integer written without fraction or exponent that fits in int64.
std::optional<int64_t> JsonInteger(std::string_view v);
// Any JSON number as a double.
std::optional<double> JsonNumber(std::string_view v);

// Builds an object from member texts: "{" + each (raw key, value) + extra
// members + "}". Used to drop or replace members without touching the rest.
class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(size_t reserve = 0) { out_.reserve(reserve + 2); out_ += '{'; }
  void Raw(std::string_view raw_key, std::string_view value);  // key as written, without quotes
  void Member(const JsonMember& m) { Raw(m.key, m.value); }
  std::string Finish() && { out_ += '}'; return std::move(out_); }

 private:
  std::string out_;
  bool first_ = true;
};

}  // namespace forge
