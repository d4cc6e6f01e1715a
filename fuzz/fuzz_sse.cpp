// libFuzzer target: the incremental SSE parser, fed the same bytes whole and
// cut at a point chosen by the input; both must yield the same events.
#include <cstdlib>
#include <string_view>

#include "proxy/sse.h"

using forge::proxy::SseEvent;
using forge::proxy::SseParser;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  SseParser whole, split;
  std::vector<SseEvent> a, b;
  whole.Feed(bytes, a);
  split.Feed(bytes.substr(0, cut), b);
  split.Feed(bytes.substr(cut), b);
  if (a.size() != b.size()) std::abort();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].data != b[i].data || a[i].event != b[i].event || a[i].id != b[i].id) std::abort();
  }
  return 0;
}
