#include "store/recent_prompts.h"

#include "store/little_endian.h"

namespace forge::store {

RecentPrompts::Base RecentPrompts::LongestShared(const std::string& rollout,
                                                 const std::vector<int32_t>& prompt) const {
  Base best;
  // Oldest first, so of prompts that share as much the latest is the base.
  auto consider = [&](const Prompt& p) {
    size_t shared = CommonPrefix(p.ids, prompt);
    if (shared > 0 && shared >= best.prefix) best = {p.call, shared};
  };
  if (auto it = by_rollout_.find(rollout); it != by_rollout_.end()) {
    for (const Prompt& p : it->second.prompts) consider(p);
  }
  if (auto it = pending_.find(rollout); it != pending_.end()) {
    for (const Prompt& p : it->second) consider(p);
  }
  return best;
}

void RecentPrompts::AddPending(const std::string& rollout, int64_t call, const std::vector<int32_t>& prompt) {
  if (prompt.empty()) return;
  std::deque<Prompt>& prompts = pending_[rollout];
  prompts.push_back({call, prompt});
  if (prompts.size() > calls_per_rollout_) prompts.pop_front();
}

void RecentPrompts::Commit() {
  for (auto& [rollout, prompts] : pending_) {
    auto [it, added] = by_rollout_.try_emplace(rollout);
    Rollout& r = it->second;
    if (added) {
      r.in_use_order = use_order_.insert(use_order_.end(), rollout);
    } else {
      use_order_.splice(use_order_.end(), use_order_, r.in_use_order);
    }
    for (Prompt& p : prompts) {
      bytes_ += Bytes(p);
      r.prompts.push_back(std::move(p));
    }
    while (r.prompts.size() > calls_per_rollout_) {
      bytes_ -= Bytes(r.prompts.front());
      r.prompts.pop_front();
    }
  }
  pending_.clear();
  // The rollout just used is last, so it goes only when it alone is too much.
  while (bytes_ > max_bytes_ && !use_order_.empty()) {
    auto oldest = by_rollout_.find(use_order_.front());
    for (const Prompt& p : oldest->second.prompts) bytes_ -= Bytes(p);
    by_rollout_.erase(oldest);
    use_order_.pop_front();
  }
}

}  // namespace forge::store
