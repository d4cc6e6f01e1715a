#include "dedup/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace forge::dedup {

records::Json Distribution(const std::vector<float>& best, int bins, float resolved_from) {
  records::Json out = records::Json::object();
  std::vector<float> values;
  size_t below = 0;
  for (float v : best) {
    if (v < -1.0f) continue;
    if (v < resolved_from) {
      ++below;
      values.push_back(-2.0f);  // sorts first; reported as "below"
      continue;
    }
    values.push_back(std::min(v, 1.0f));
  }
  out["items"] = values.size();
  if (resolved_from > -1.0f) {
    out["resolved_from"] = std::round(resolved_from * 1e4) / 1e4;
    out["below"] = below;
  }
  std::vector<size_t> counts(bins, 0);
  for (float v : values) {
    if (v < -1.0f) continue;
    int b = static_cast<int>(std::floor(std::max(v, 0.0f) * bins));
    counts[std::clamp(b, 0, bins - 1)]++;
  }
  records::Json histogram = records::Json::array();
  for (int b = 0; b < bins; ++b) {
    histogram.push_back({{"from", std::round(1000.0 * b / bins) / 1000},
                         {"to", std::round(1000.0 * (b + 1) / bins) / 1000},
                         {"count", counts[b]}});
  }
  out["histogram"] = histogram;
  std::sort(values.begin(), values.end());
  records::Json quantiles = records::Json::array();
  for (double q : {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0}) {
    if (values.empty()) break;
    size_t i = static_cast<size_t>(std::round(q * (values.size() - 1)));
    if (values[i] < -1.0f) {
      quantiles.push_back({{"q", q}, {"below", out["resolved_from"]}});
    } else {
      quantiles.push_back({{"q", q}, {"value", std::round(values[i] * 1e4) / 1e4}});
    }
  }
  out["quantiles"] = quantiles;
  return out;
}

std::string FormatReport(const records::Json& r) {
  std::string s;
  s += fmt::format("records {}  compared {}  exact duplicates {}  mode {}  search {}\n",
                   r.value("records", 0), r.value("compared", 0), r.value("exact_duplicates", 0),
                   r.value("mode", ""), r.value("search", records::Json::object()).value("index", ""));
  s += "threshold      kept   dropped\n";
  for (const auto& row : r["thresholds"]) {
    s += fmt::format("{:>9.3f} {:>9} {:>9}{}\n", row["threshold"].get<double>(),
                     row["kept"].get<size_t>(), row["dropped"].get<size_t>(),
                     row.value("chosen", false) ? "   <- --threshold" : "");
  }
  const auto& dist = r["highest_similarity"];
  s += "highest similarity of each item (after exact stage):\n";
  for (const auto& q : dist["quantiles"]) {
    int percent = static_cast<int>(std::round(q["q"].get<double>() * 100));
    if (q.contains("below")) {
      s += fmt::format("  p{}<{:.2f}", percent, q["below"].get<double>());
    } else {
      s += fmt::format("  p{}={:.4f}", percent, q["value"].get<double>());
    }
  }
  s += "\n";
  if (dist.contains("below") && dist["below"].get<size_t>() > 0) {
    s += fmt::format("  below {:.2f} (not resolved further; lower --report-thresholds to see) {:>8}\n",
                     dist["resolved_from"].get<double>(), dist["below"].get<size_t>());
  }
  size_t peak = 1;
  for (const auto& bin : dist["histogram"]) peak = std::max(peak, bin["count"].get<size_t>());
  for (const auto& bin : dist["histogram"]) {
    size_t count = bin["count"].get<size_t>();
    if (count == 0) continue;
    s += fmt::format("  [{:.2f},{:.2f}) {:>8} {}\n", bin["from"].get<double>(),
                     bin["to"].get<double>(), count, std::string((count * 40 + peak - 1) / peak, '#'));
  }
  if (r.contains("recall")) s += "hnsw recall: " + r["recall"].dump() + "\n";
  return s;
}

}  // namespace forge::dedup
