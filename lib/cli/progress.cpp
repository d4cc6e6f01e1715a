#include "cli/progress.h"

#include <cstdio>

#include <fmt/format.h>

#include "cli/diagnostics.h"

namespace forge::cli {

Progress::Progress(std::string label, size_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(StderrIsTerminal()),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { Finish(); }

void Progress::Advance(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  DrawLocked(false);
}

void Progress::SetTotal(size_t total) {
  std::lock_guard<std::mutex> lock(mutex_);
  total_ = total;
  DrawLocked(false);
}

void Progress::SetDetail(std::string detail) {
  std::lock_guard<std::mutex> lock(mutex_);
  detail_ = std::move(detail);
  DrawLocked(false);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_ || finished_) return;
  finished_ = true;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

void Progress::DrawLocked(bool force) {
  if (!enabled_ || finished_) return;
  auto now = std::chrono::steady_clock::now();
  // At most ten redraws a second: drawing must never be what slows a tool.
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = fmt::format("\r\033[K{}: {}", ToolName(), label_);
  if (total_ > 0) {
    line += fmt::format(" {}/{} ({:.0f}%)", done_, total_, 100.0 * done_ / total_);
    if (done_ > 0 && done_ < total_) {
      line += fmt::format(" eta {:.0f}s", elapsed / done_ * (total_ - done_));
    }
  } else {
    line += fmt::format(" {}", done_);
  }
  line += fmt::format(" {:.1f}s", elapsed);
  if (!detail_.empty()) line += "  " + detail_;
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace forge::cli
