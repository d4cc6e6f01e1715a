// The store's memory of the last few calls' prompt ids of each rollout, so
// a call's prompt is stored as the difference from the one it extends (a
// harness resends its conversation) without reading prompts back.
//
// Two things make it more than a map. A call inserted by a transaction that
// rolls back leaves an id SQLite hands out again, so a prompt is only
// remembered once its transaction commits; until then it is pending, seen
// by the calls after it in the same transaction. And a proxy serves rollout
// after rollout for days: what is remembered is bounded in bytes, the rollouts
// used least recently forgotten first (a finished rollout is never used
// again). Forgetting only costs space: a call with no base is stored whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace forge::store {

class RecentPrompts {
 public:
  // A rollout keeps its last calls_per_rollout prompts (a main thread plus a
  // few side calls); all rollouts together at most max_bytes of ids.
  RecentPrompts(size_t calls_per_rollout, size_t max_bytes)
      : calls_per_rollout_(calls_per_rollout), max_bytes_(max_bytes) {}

  struct Base {
    int64_t call = 0;   // 0: none
    size_t prefix = 0;  // ids prompt shares with that call's
  };
  // The remembered call of rollout whose prompt begins as prompt does for
  // the most ids, committed or pending; the latest of those that tie.
  Base LongestShared(const std::string& rollout, const std::vector<int32_t>& prompt) const;
  // Remembers a call inserted by the open transaction.
  void AddPending(const std::string& rollout, int64_t call, const std::vector<int32_t>& prompt);
  // The transaction committed: its calls join what is remembered.
  void Commit();
  // The transaction rolled back (or is retried): its calls are forgotten.
  void DiscardPending() { pending_.clear(); }

  size_t bytes() const { return bytes_; }
  size_t rollouts() const { return by_rollout_.size(); }

 private:
  struct Prompt {
    int64_t call;
    std::vector<int32_t> ids;
  };
  struct Rollout {
    std::deque<Prompt> prompts;
    std::list<std::string>::iterator in_use_order;
  };
  static size_t Bytes(const Prompt& p) { return p.ids.size() * sizeof(int32_t); }

  size_t calls_per_rollout_, max_bytes_;
  std::unordered_map<std::string, Rollout> by_rollout_;
  std::list<std::string> use_order_;  // least recently committed to first
  size_t bytes_ = 0;
  // A batch holds hundreds of calls of a rollout: only the last few are kept.
  std::unordered_map<std::string, std::deque<Prompt>> pending_;
};

}  // namespace forge::store
