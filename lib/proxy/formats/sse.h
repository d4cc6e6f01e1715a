// An incremental Server-Sent Events reader (WHATWG EventSource rules): bytes go
// in as they arrive, in pieces of any size, and whole events come out. Used to
// read what a translator wrote back the way a client library would, and fuzzed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace forge::proxy::wire {

struct SseEvent {
  std::string event;  // "" when the event had no event: line ("message")
  std::string data;   // data: lines joined with '\n'
  std::string id;
};

class SseParser {
 public:
  // Lines longer than this are a broken peer, not a slow one.
  static constexpr size_t kMaxLine = 64u << 20;

  // Appends bytes; complete events are appended to `out`. Returns false (and
  // stops) when a line exceeds kMaxLine.
  bool Feed(std::string_view bytes, std::vector<SseEvent>& out);
  // End of input: a trailing event without its blank line is dropped, as
  // EventSource does; returns whether bytes were left unterminated.
  bool Finish() const { return !line_.empty() || pending_; }

 private:
  void Line(std::string_view line, std::vector<SseEvent>& out);

  std::string line_;
  bool after_cr_ = false;  // a '\r' ended the last line; swallow a following '\n'
  bool pending_ = false;   // fields seen since the last dispatch
  bool has_data_ = false;
  SseEvent current_;
  bool first_line_ = true;  // a leading UTF-8 BOM is ignored
};

}  // namespace forge::proxy::wire
