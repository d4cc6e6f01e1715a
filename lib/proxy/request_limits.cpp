#include "proxy/request_limits.h"

namespace forge::proxy {

bool CapMaxTokens(Json& chat_body, int64_t cap) {
  if (cap <= 0 || !chat_body.is_object()) return false;
  bool changed = false;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = chat_body.find(key);
    if (it == chat_body.end() || it->is_null()) continue;
    if (it->is_number() && it->get<double>() > static_cast<double>(cap)) {
      *it = cap;
      changed = true;
    }
  }
  return changed;
}

}  // namespace forge::proxy
