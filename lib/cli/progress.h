// A progress display on stderr, drawn only when stderr is a terminal; on a
// pipe or a file it prints nothing, so logs stay clean. One overall line
// (count, percent, ETA, detail) and optionally lines beneath it, e.g. one per
// running job with its phase.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace forge::cli {

class Progress {
 public:
  // total 0 means unknown.
  explicit Progress(std::string label, size_t total = 0);
  ~Progress();

  void Advance(size_t n = 1);
  void SetTotal(size_t total);
  // Free text shown after the counts, e.g. "3 running, 1 failed".
  void SetDetail(std::string detail);
  // Lines drawn under the overall line (at most kMaxLines, then "... N more").
  void SetLines(std::vector<std::string> lines);
  static constexpr size_t kMaxLines = 20;
  // Clears the line; further calls draw nothing.
  void Finish();

  bool enabled() const { return enabled_; }

 private:
  void DrawLocked(bool force);

  std::string label_;
  size_t total_;
  size_t done_ = 0;
  std::string detail_;
  std::vector<std::string> lines_;
  size_t drawn_lines_ = 0;  // extra lines on screen below the overall line
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex mutex_;
};

}  // namespace forge::cli
