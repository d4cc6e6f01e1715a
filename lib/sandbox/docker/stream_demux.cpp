#include "sandbox/docker/stream_demux.h"

#include <algorithm>

namespace forge::sandbox::docker {

void StreamDemux::Watch(std::string_view payload) {
  if (watched_) return;
  watch_window_.append(payload);
  if (!watch_in_line_) {
    size_t at = watch_window_.find(watch_prefix_);
    if (at == std::string::npos) {
      // Keep only what could still be the start of the prefix.
      size_t keep = std::min(watch_window_.size(), watch_prefix_.size() - 1);
      watch_window_.erase(0, watch_window_.size() - keep);
      return;
    }
    watch_window_.erase(0, at + watch_prefix_.size());
    watch_in_line_ = true;
  }
  if (size_t end = watch_window_.find('\n'); end != std::string::npos) {
    watched_ = watch_window_.substr(0, end);
    watch_window_.clear();
  }
}

void StreamDemux::Append(std::string_view payload) {
  std::string* target = nullptr;
  switch (stream_) {
    case 0:  // stdin echo: never requested, ignore
      return;
    case 1:
      target = &out_;
      break;
    case 2:
    case 3:  // "system error" frames from newer engines: treat as stderr
      target = &err_;
      if (!watch_prefix_.empty()) Watch(payload);
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
