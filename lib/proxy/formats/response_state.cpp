#include "proxy/formats/response_state.h"

namespace forge::proxy {

void MemoryResponseStateStore::Put(const std::string& response_id, Json messages) {
  size_t bytes = messages.dump().size();
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(response_id); it != entries_.end()) {
    bytes_ -= it->second.bytes;
    entries_.erase(it);
    std::erase(order_, response_id);
  }
  entries_[response_id] = Entry{std::move(messages), bytes};
  order_.push_back(response_id);
  bytes_ += bytes;
  while (!order_.empty() && (entries_.size() > max_entries_ || bytes_ > max_bytes_) &&
         order_.front() != response_id) {
    auto it = entries_.find(order_.front());
    bytes_ -= it->second.bytes;
    entries_.erase(it);
    order_.pop_front();
  }
}

std::optional<Json> MemoryResponseStateStore::Get(const std::string& response_id) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(response_id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.messages;
}

size_t MemoryResponseStateStore::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace forge::proxy
