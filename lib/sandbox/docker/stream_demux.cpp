#include "sandbox/docker/stream_demux.h"

#include <algorithm>

namespace forge::sandbox::docker {

void StreamDemux::Watcher::Feed(std::string_view payload) {
  if (prefix.empty() || line) return;
  window.append(payload);
  if (!in_line) {
    size_t at = window.find(prefix);
    if (at == std::string::npos) {
      // Keep only what could still be the start of the prefix.
      size_t keep = std::min(window.size(), prefix.size() - 1);
      window.erase(0, window.size() - keep);
      return;
    }
    window.erase(0, at + prefix.size());
    in_line = true;
  }
  if (size_t end = window.find('\n'); end != std::string::npos) {
    line = window.substr(0, end);
    window.clear();
  }
}

void StreamDemux::Append(std::string_view payload) {
  std::string* target = nullptr;
  switch (stream_) {
    case 0:  // stdin echo: never requested, ignore
      return;
    case 1:
      target = &out_;
      out_watch_.Feed(payload);
      break;
    case 2:
    case 3:  // "system error" frames from newer engines: treat as stderr
      target = &err_;
      err_watch_.Feed(payload);
      break;
    default:
      malformed_ = true;
      return;
  }
  size_t room = max_bytes_ > target->size() ? max_bytes_ - target->size() : 0;
  if (payload.size() > room) truncated_ = true;
  target->append(payload.substr(0, room));
}

void StreamDemux::Feed(std::string_view data) {
  while (!data.empty()) {
    if (remaining_ == 0) {
      size_t take = std::min(data.size(), sizeof(header_) - header_fill_);
      std::copy_n(data.data(), take, header_ + header_fill_);
      header_fill_ += take;
      data.remove_prefix(take);
      if (header_fill_ < sizeof(header_)) return;
      header_fill_ = 0;
      stream_ = header_[0];
      remaining_ = (uint32_t{header_[4]} << 24) | (uint32_t{header_[5]} << 16) |
                   (uint32_t{header_[6]} << 8) | uint32_t{header_[7]};
      continue;
    }
    size_t take = std::min<size_t>(data.size(), remaining_);
    Append(data.substr(0, take));
    remaining_ -= static_cast<uint32_t>(take);
    data.remove_prefix(take);
  }
}

}  // namespace forge::sandbox::docker
