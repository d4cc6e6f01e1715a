#include "cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>


namespace forge::cli {

TerminalProgress::TerminalProgress(std::string tool, std::string label, size_t total, bool enabled)
    : tool_(std::move(tool)),
      label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()) {}

TerminalProgress::~TerminalProgress() { Finish(); }

void TerminalProgress::Advance(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  DrawLocked(false);
}

void TerminalProgress::SetTotal(size_t total) {
  std::lock_guard<std::mutex> lock(mutex_);
  total_ = total;
  DrawLocked(false);
}

void TerminalProgress::SetDetail(std::string detail) {
  std::lock_guard<std::mutex> lock(mutex_);
  detail_ = std::move(detail);
  DrawLocked(false);
}

void TerminalProgress::SetLines(std::vector<std::string> lines) {
  std::lock_guard<std::mutex> lock(mutex_);
  lines_ = std::move(lines);
  DrawLocked(false);
}

void TerminalProgress::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_ || finished_) return;
  finished_ = true;
  std::fputs("\r\033[J", stderr);  // the overall line and everything below it
  std::fflush(stderr);
}

namespace {

size_t TerminalWidth() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// Cut to the terminal's width, so no line wraps and the cursor arithmetic holds.
std::string Fit(std::string line, size_t width) {
  if (width > 1 && line.size() >= width) line.resize(width - 1);
  return line;
}

}  // namespace

void TerminalProgress::DrawLocked(bool force) {
  if (!enabled_ || finished_) return;
  auto now = std::chrono::steady_clock::now();
  // At most ten redraws a second: drawing must never be what slows a tool.
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = fmt::format("{}: {}", tool_, label_);
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
  const size_t width = TerminalWidth();
  // Back to the overall line, clear to the end of the screen, redraw all.
  std::string frame = "\r\033[J" + Fit(line, width);
  size_t shown = std::min(lines_.size(), kMaxLines);
  for (size_t i = 0; i < shown; ++i) frame += "\n" + Fit(lines_[i], width);
  if (lines_.size() > shown) {
    frame += "\n" + fmt::format("  ... {} more", lines_.size() - shown);
    ++shown;
  }
  drawn_lines_ = shown;
  if (shown > 0) frame += fmt::format("\033[{}A\r", shown);
  std::fputs(frame.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace forge::cli
