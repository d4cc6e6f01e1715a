#include "proxy/sse.h"

#include <cstring>

namespace forge::proxy {

SseEvent& SseEvents::Add() {
  if (size_ == items_.size()) items_.emplace_back();
  SseEvent& e = items_[size_++];
  e.event.clear();
  e.data.clear();
  e.id.clear();
  return e;
}

namespace {

// Where the line starting at `from` ends: its '\r' or '\n', or npos.
size_t LineEnd(std::string_view bytes, size_t from) {
  const char* p = bytes.data() + from;
  const size_t n = bytes.size() - from;
  const void* nl = std::memchr(p, '\n', n);
  const size_t until = nl ? static_cast<size_t>(static_cast<const char*>(nl) - p) : n;
  const void* cr = std::memchr(p, '\r', until);
  if (cr) return from + static_cast<size_t>(static_cast<const char*>(cr) - p);
  return nl ? from + until : std::string_view::npos;
}

}  // namespace

bool SseParser::Feed(std::string_view bytes, SseEvents& out) {
  size_t i = 0;
  const size_t n = bytes.size();
  if (after_cr_ && n > 0) {
    after_cr_ = false;
    if (bytes[0] == '\n') i = 1;
  }
  while (i < n) {
    const size_t end = LineEnd(bytes, i);
    if (end == std::string_view::npos) {  // the rest waits for its line end
      if (line_.size() + (n - i) > kMaxLine) return false;
      line_.append(bytes.substr(i));
      return true;
    }
    std::string_view line = bytes.substr(i, end - i);
    if (line_.size() + line.size() > kMaxLine) return false;
    if (!line_.empty()) {
      line_.append(line);
      line = line_;
    }
    Line(line, out);
    line_.clear();
    if (bytes[end] == '\n') {
      i = end + 1;
    } else if (end + 1 < n) {
      i = end + (bytes[end + 1] == '\n' ? 2 : 1);
    } else {
      after_cr_ = true;
      i = n;
    }
  }
  return true;
}

bool SseParser::Feed(std::string_view bytes, std::vector<SseEvent>& out) {
  SseEvents events;
  bool ok = Feed(bytes, events);
  for (SseEvent& e : events) out.push_back(std::move(e));
  return ok;
}

void SseParser::Line(std::string_view line, SseEvents& out) {
  if (first_line_) {
    first_line_ = false;
    if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
  }
  if (line.empty()) {  // dispatch: the built strings move out, the slot's room comes back
    if (has_data_) {
      SseEvent& e = out.Add();
      e.event.swap(current_.event);
      e.data.swap(current_.data);
      e.id = current_.id;
    }
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
    current_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    current_.event.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) current_.id.assign(value);
  }
  // "retry" and unknown fields are ignored.
}

}  // namespace forge::proxy
