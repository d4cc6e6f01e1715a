// TerminalEnv's progress display on stderr, drawn only when stderr is a
// terminal; on a pipe or a file it prints nothing, so logs stay clean. One
// overall line (count, percent, ETA, detail) and optionally lines beneath it,
// e.g. one per running job with its phase.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "base/progress.h"

namespace forge::cli {

class TerminalProgress : public forge::Progress {
 public:
  // Lines start with "tool: label"; nothing is drawn unless enabled (stderr
  // is a terminal).
  TerminalProgress(std::string tool, std::string label, size_t total, bool enabled);
  ~TerminalProgress() override;

  void Advance(size_t n = 1) override;
  void SetTotal(size_t total) override;
  void SetDetail(std::string detail) override;
  // At most kMaxLines, then "... N more".
  void SetLines(std::vector<std::string> lines) override;
  static constexpr size_t kMaxLines = 20;
  void Finish() override;
  bool shown() const override { return enabled_; }

 private:
  void DrawLocked(bool force);

  std::string tool_;
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
