#include "proxy/sse.h"

namespace forge::proxy {

void SseParser::Feed(std::string_view bytes, std::vector<SseEvent>& out) {
  // Lines are read where they are: from the bytes themselves when nothing is
  // held back (a read of whole events), so only a partial last line is copied.
  std::string_view input = bytes;
  if (!buffer_.empty()) {
    buffer_.append(bytes);
    input = buffer_;
  }
  size_t start = 0;
  for (;;) {
    size_t nl = input.find('\n', start);
    if (nl == std::string_view::npos) break;
    std::string_view line = input.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Line(line, out);
    start = nl + 1;
  }
  if (input.data() == buffer_.data()) {
    buffer_.erase(0, start);
  } else {
    buffer_.assign(input.substr(start));
  }
}

void SseParser::Line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    if (has_data_) out.push_back(std::move(current_));
    current_ = SseEvent{};
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment / keepalive
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) current_.data.push_back('\n');
    current_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    current_.event = std::string(value);
  }
}

}  // namespace forge::proxy
