#include "dedup/ranking.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "dedup/text.h"

namespace forge::dedup {

Result<std::vector<RankKey>> ParseRankKeys(const std::string& spec) {
  std::vector<RankKey> keys;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    std::stringstream words(item);
    std::string path, direction, extra;
    words >> path >> direction >> extra;
    if (path.empty()) continue;
    if (!extra.empty() || (!direction.empty() && direction != "asc" && direction != "desc")) {
      return Status::InvalidArgument("--rank: expected 'field [asc|desc]', got '" + item + "'");
    }
    keys.push_back(RankKey{path, direction == "desc"});
  }
  return keys;
}

namespace {

// A total order over JSON scalars: booleans and numbers compare as numbers,
// strings lexically, numbers before strings; other values compare as JSON text.
int CompareValues(const records::Json& a, const records::Json& b) {
  auto numeric = [](const records::Json& v) { return v.is_number() || v.is_boolean(); };
  auto as_number = [](const records::Json& v) {
    return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
  };
  if (numeric(a) && numeric(b)) {
    double x = as_number(a), y = as_number(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (numeric(a) != numeric(b)) return numeric(a) ? -1 : 1;
  if (a.is_string() && b.is_string()) {
    return a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
  }
  return a.dump().compare(b.dump());
}

}  // namespace

std::vector<size_t> RankOrder(const std::vector<const records::Json*>& records,
                              const std::vector<RankKey>& keys) {
  // Look every key up once per record rather than once per comparison.
  std::vector<std::vector<const records::Json*>> values(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    for (const RankKey& key : keys) {
      const records::Json* v = FindPath(*records[i], key.path);
      values[i].push_back(v != nullptr && !v->is_null() ? v : nullptr);
    }
  }
  std::vector<size_t> order(records.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    for (size_t k = 0; k < keys.size(); ++k) {
      const records::Json* a = values[x][k];
      const records::Json* b = values[y][k];
      if (a == nullptr || b == nullptr) {
        if (a == b) continue;
        return b == nullptr;  // present before missing
      }
      int c = CompareValues(*a, *b);
      if (c != 0) return keys[k].descending ? c > 0 : c < 0;
    }
    return x < y;
  });
  return order;
}

}  // namespace forge::dedup
