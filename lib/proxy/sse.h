// An incremental Server-Sent Events reader (WHATWG EventSource rules: LF,
// CRLF or CR line ends, comments, a leading BOM, the last event id kept):
// bytes go in as they arrive, in pieces of any size, and whole events come
// out. The proxy reads every upstream stream with it, so it is fast (lines
// are found with memchr and read where they lie; only a line cut by a read
// is copied) and allocation-free once warm (SseEvents keeps its strings'
// room from one read to the next). Fuzzed by fuzz/fuzz_sse.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace forge::proxy {

struct SseEvent {
  std::string event;  // "" when the event had no event: line ("message")
  std::string data;   // data: lines joined with '\n'
  std::string id;     // the last event id seen, as EventSource keeps it
};

// The events of one read. clear() keeps every string's room for the next.
class SseEvents {
 public:
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  SseEvent& operator[](size_t i) { return items_[i]; }
  const SseEvent& operator[](size_t i) const { return items_[i]; }
  SseEvent* begin() { return items_.data(); }
  SseEvent* end() { return items_.data() + size_; }
  const SseEvent* begin() const { return items_.data(); }
  const SseEvent* end() const { return items_.data() + size_; }
  // The next slot, its strings emptied (their room kept).
  SseEvent& Add();

 private:
  std::vector<SseEvent> items_;
  size_t size_ = 0;
};

class SseParser {
 public:
  // Lines longer than this are a broken peer, not a slow one.
  static constexpr size_t kMaxLine = 64u << 20;

  // Appends bytes; complete events are added to out. Returns false (and
  // stops) when a line exceeds kMaxLine.
  bool Feed(std::string_view bytes, SseEvents& out);
  // The same, for callers that keep the events (tests, tools).
  bool Feed(std::string_view bytes, std::vector<SseEvent>& out);
  // End of input: a trailing event without its blank line is dropped, as
  // EventSource does; returns whether bytes were left unterminated.
  bool Finish() const { return !line_.empty() || pending_; }

 private:
  void Line(std::string_view line, SseEvents& out);

  std::string line_;        // a line cut by the end of a read
  bool after_cr_ = false;   // a read ended on '\r': a '\n' starting the next belongs to it
  bool pending_ = false;    // fields seen since the last dispatch
  bool has_data_ = false;
  bool first_line_ = true;  // a leading UTF-8 BOM is ignored
  SseEvent current_;
};

}  // namespace forge::proxy
