#include "proxy/formats/sse.h"

namespace forge::proxy::wire {

bool SseParser::Feed(std::string_view bytes, std::vector<SseEvent>& out) {
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = (c == '\r');
      Line(line_, out);
      line_.clear();
      continue;
    }
    if (line_.size() >= kMaxLine) return false;
    line_ += c;
  }
  return true;
}

void SseParser::Line(std::string_view line, std::vector<SseEvent>& out) {
  if (first_line_) {
    first_line_ = false;
    if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
  }
  if (line.empty()) {  // dispatch
    if (has_data_) out.push_back(current_);
    current_.event.clear();
    current_.data.clear();
    has_data_ = false;
    pending_ = false;
    return;
  }
  if (line[0] == ':') return;  // comment (keep-alive)
  std::string_view field = line, value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  pending_ = true;
  if (field == "data") {
    if (has_data_) current_.data += '\n';
    current_.data += value;
    has_data_ = true;
  } else if (field == "event") {
    current_.event = value;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) current_.id = value;
  }
  // "retry" and unknown fields are ignored.
}

}  // namespace forge::proxy::wire
