// `forge-dedup calibrate`: for each threshold, what it would keep and drop and
// the pairs closest to it on either side (ids, similarity, and the two texts
// around their first difference), so a person can judge where duplicates end.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "dedup/similarity_graph.h"
#include "records/jsonl.h"

namespace forge::dedup {

// Describes item i of the graph for a near-miss entry: id, where, text.
struct ItemView {
  std::string id;
  std::string where;
  std::string_view text;
};

// The up to `count` pairs scoring lowest at or above threshold ("above": the
// threshold calls them duplicates) and highest below it ("below": kept
// apart), each {"score", "a": {id, where, snippet}, "b": {...}}.
records::Json NearMisses(const SimilarityGraph& graph, float threshold, size_t count,
                         const std::function<ItemView(uint32_t)>& item);

// The two texts from a few words before their first differing word, each cut
// to about `width` characters ("…" marks a cut).
std::pair<std::string, std::string> DiffSnippets(std::string_view a, std::string_view b,
                                                 size_t width = 160);

// A readable table of calibration rows (threshold, kept, dropped, above,
// below), for stderr.
std::string FormatCalibration(const records::Json& rows);

}  // namespace forge::dedup
