#include "dedup/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace forge::dedup {

namespace {

// Byte offsets where each whitespace-separated word starts.
std::vector<size_t> WordStarts(std::string_view s) {
  std::vector<size_t> starts;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool space = s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r';
    if (!space && !in_word) starts.push_back(i);
    in_word = !space;
  }
  return starts;
}

std::string_view WordAt(std::string_view s, size_t start) {
  size_t end = s.find_first_of(" \n\t\r", start);
  return s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

// From byte `from`, about width bytes, whitespace runs shown as one space,
// without splitting a UTF-8 sequence.
std::string Excerpt(std::string_view s, size_t from, size_t width) {
  std::string out = from > 0 ? "…" : "";
  size_t i = from;
  for (; i < s.size() && out.size() < width; ++i) {
    char c = s[i];
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) out += s[i++];
  if (i < s.size()) out += "…";
  return out;
}

records::Json PairJson(const SimilarPair& p, const std::function<ItemView(uint32_t)>& item) {
  ItemView a = item(p.earlier), b = item(p.later);
  auto [sa, sb] = DiffSnippets(a.text, b.text);
  return {{"score", std::round(p.score * 1e4) / 1e4},
          {"a", {{"id", a.id}, {"where", a.where}, {"snippet", sa}}},
          {"b", {{"id", b.id}, {"where", b.where}, {"snippet", sb}}}};
}

}  // namespace

std::pair<std::string, std::string> DiffSnippets(std::string_view a, std::string_view b,
                                                 size_t width) {
  std::vector<size_t> wa = WordStarts(a), wb = WordStarts(b);
  size_t same = 0;
  while (same < wa.size() && same < wb.size() && WordAt(a, wa[same]) == WordAt(b, wb[same])) ++same;
  size_t from = same >= 4 ? same - 4 : 0;
  return {Excerpt(a, from < wa.size() ? wa[from] : a.size(), width),
          Excerpt(b, from < wb.size() ? wb[from] : b.size(), width)};
}

records::Json NearMisses(const SimilarityGraph& graph, float threshold, size_t count,
                         const std::function<ItemView(uint32_t)>& item) {
  // The pairs nearest the threshold: a partial sort of each side is enough.
  std::vector<const SimilarPair*> above, below;
  for (const SimilarPair& p : graph.pairs) (p.score >= threshold ? above : below).push_back(&p);
  auto nearest = [&](std::vector<const SimilarPair*>& side, bool ascending) {
    size_t k = std::min(count, side.size());
    std::partial_sort(side.begin(), side.begin() + k, side.end(),
                      [&](const SimilarPair* x, const SimilarPair* y) {
                        if (x->score != y->score) return ascending == (x->score < y->score);
                        return x->later != y->later ? x->later < y->later : x->earlier < y->earlier;
                      });
    records::Json out = records::Json::array();
    for (size_t i = 0; i < k; ++i) out.push_back(PairJson(*side[i], item));
    return out;
  };
  return {{"above", nearest(above, true)}, {"below", nearest(below, false)}};
}

std::string FormatCalibration(const records::Json& rows) {
  std::string s;
  for (const auto& row : rows) {
    s += fmt::format("threshold {:.3f}: keeps {}, drops {}{}\n", row["threshold"].get<double>(),
                     row["kept"].get<size_t>(), row["dropped"].get<size_t>(),
                     row.value("chosen", false) ? "   (--threshold)" : "");
    for (const char* side : {"above", "below"}) {
      const auto& pairs = row["near_misses"][side];
      if (pairs.empty()) continue;
      s += std::string(side[0] == 'a' ? "  just at or above (duplicates at this threshold):\n"
                                      : "  just below (kept apart at this threshold):\n");
      for (const auto& p : pairs) {
        s += fmt::format("    {:.4f}  {} ~ {}\n      {}\n      {}\n", p["score"].get<double>(),
                         p["a"]["id"].get<std::string>(), p["b"]["id"].get<std::string>(),
                         p["a"]["snippet"].get<std::string>(), p["b"]["snippet"].get<std::string>());
      }
    }
  }
  return s;
}

}  // namespace forge::dedup
