// Bytes that arrive in pieces (a streamed HTTP answer), cut into whole lines:
// each Feed hands every line it completes, without its '\n', to on_line and
// keeps the unfinished tail for the next piece.
#pragma once

#include <string>
#include <string_view>

namespace forge {

class LineSplitter {
 public:
  template <typename OnLine>  // void(std::string_view line)
  void Feed(std::string_view bytes, OnLine&& on_line) {
    pending_.append(bytes);
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      on_line(std::string_view(pending_).substr(start, nl - start));
    }
    pending_.erase(0, start);
  }

 private:
  std::string pending_;
};

}  // namespace forge
