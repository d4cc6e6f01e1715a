#include "store/rows.h"

#include <chrono>

#include "base/json_dump.h"
#include "store/content.h"

namespace forge::store {

double Now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

nlohmann::json ParseJsonOrNull(const std::string& text) {
  if (text.empty()) return nullptr;
  auto value = ReadStoredJson(text, "");
  return value.ok() && !value->is_discarded() ? std::move(*value) : nlohmann::json(nullptr);
}

std::optional<std::string> JsonOrNull(const nlohmann::json& record) {
  if (record.is_null()) return std::nullopt;
  return DumpJson(record);
}

}  // namespace forge::store
