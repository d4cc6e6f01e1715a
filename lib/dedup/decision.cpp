#include "dedup/decision.h"

#include <numeric>

namespace forge::dedup {

namespace {

Decision DecideSemDeDup(const SimilarityGraph& graph, size_t count, float threshold) {
  Decision d;
  d.matched.assign(count, Decision::kKept);
  d.score.assign(count, 0.0f);
  // Pairs are sorted by later item, so every earlier item's fate is known
  // when a later item's pairs are read.
  for (const SimilarPair& p : graph.pairs) {
    if (p.score < threshold || d.matched[p.earlier] != Decision::kKept) continue;
    uint32_t& m = d.matched[p.later];
    if (m == Decision::kKept) {
      m = p.earlier;
      d.score[p.later] = p.score;
      ++d.dropped;
    } else if (p.score > d.score[p.later]) {  // report the closest kept match
      m = p.earlier;
      d.score[p.later] = p.score;
    }
  }
  return d;
}

uint32_t Find(std::vector<uint32_t>& parent, uint32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

Decision DecideComponents(const SimilarityGraph& graph, size_t count, float threshold) {
  std::vector<uint32_t> parent(count);
  std::iota(parent.begin(), parent.end(), 0u);
  for (const SimilarPair& p : graph.pairs) {
    if (p.score < threshold) continue;
    uint32_t a = Find(parent, p.earlier), b = Find(parent, p.later);
    // The root is always the best-ranked (lowest) index of its component.
    if (a < b) parent[b] = a;
    else if (b < a) parent[a] = b;
  }
  Decision d;
  d.matched.assign(count, Decision::kKept);
  d.score.assign(count, 0.0f);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t root = Find(parent, i);
    if (root != i) {
      d.matched[i] = root;
      ++d.dropped;
    }
  }
  // Score: the direct similarity to the keeper when that pair is known,
  // otherwise the strongest edge that tied the item into the component.
  std::vector<bool> direct(count, false);
  for (const SimilarPair& p : graph.pairs) {
    if (p.score < threshold) continue;
    for (uint32_t item : {p.earlier, p.later}) {
      if (d.matched[item] == Decision::kKept || direct[item]) continue;
      uint32_t other = item == p.earlier ? p.later : p.earlier;
      if (other == d.matched[item]) {
        d.score[item] = p.score;
        direct[item] = true;
      } else if (p.score > d.score[item]) {
        d.score[item] = p.score;
      }
    }
  }
  return d;
}

}  // namespace

Decision Decide(const SimilarityGraph& graph, size_t count, float threshold, DecisionMode mode) {
  return mode == DecisionMode::kSemDeDup ? DecideSemDeDup(graph, count, threshold)
                                         : DecideComponents(graph, count, threshold);
}

}  // namespace forge::dedup
