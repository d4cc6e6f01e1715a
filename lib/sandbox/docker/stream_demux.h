// Docker multiplexes a non-TTY exec's stdout and stderr on one stream: frames
// of an 8-byte header [stream, 0, 0, 0, size (uint32 big-endian)] and `size`
// payload bytes. Frames split across reads and may be larger than any
// buffer, so the decoder is incremental and keeps at most max_bytes per
// stream, flagging what it dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace forge::sandbox::docker {

class StreamDemux {
 public:
  explicit StreamDemux(size_t max_bytes_per_stream) : max_bytes_(max_bytes_per_stream) {}

  void Feed(std::string_view data);

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  std::string& out() { return out_; }
  std::string& err() { return err_; }
  bool truncated() const { return truncated_; }

  // Looks for a line of stderr that starts with `prefix`, even past the byte
  // cap and across frames; watched() is the rest of that line once its
  // newline has come.
  void WatchStderr(std::string prefix) { err_watch_.prefix = std::move(prefix); }
  const std::optional<std::string>& watched() const { return err_watch_.line; }
  // The same for stdout: the two streams come from separate pipes, so a
  // line on one says nothing about what is still in flight on the other.
  void WatchStdout(std::string prefix) { out_watch_.prefix = std::move(prefix); }
  const std::optional<std::string>& watched_stdout() const { return out_watch_.line; }
  // True when the input ended inside a frame or used an unknown stream id.
  bool malformed() const { return malformed_ || header_fill_ != 0 || remaining_ != 0; }

 private:
  struct Watcher {
    std::string prefix;
    std::string window;    // output not yet ruled out as the watched line's start
    bool in_line = false;  // the prefix was found; collecting the rest
    std::optional<std::string> line;
    void Feed(std::string_view payload);
  };
  void Append(std::string_view payload);

  size_t max_bytes_;
  std::string out_;
  std::string err_;
  bool truncated_ = false;
  bool malformed_ = false;
  unsigned char header_[8] = {};
  size_t header_fill_ = 0;
  uint8_t stream_ = 0;
  uint32_t remaining_ = 0;
  Watcher out_watch_;
  Watcher err_watch_;
};

}  // namespace forge::sandbox::docker
