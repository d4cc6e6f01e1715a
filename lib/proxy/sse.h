// Incremental Server-Sent Events parsing: bytes in as they arrive from the
// upstream, whole events out. Only what OpenAI-style streams use: data lines
// (joined by newlines), event names, comments ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace forge::proxy {

struct SseEvent {
  std::string event;
  std::string data;
};

class SseParser {
 public:
  // Appends bytes; complete events are added to out.
  void Feed(std::string_view bytes, std::vector<SseEvent>& out);
  // Bytes held back waiting for the end of an event.
  size_t pending() const { return buffer_.size(); }

 private:
  void Line(std::string_view line, std::vector<SseEvent>& out);
  std::string buffer_;
  SseEvent current_;
  bool has_data_ = false;
};

}  // namespace forge::proxy
