// Who survives a duplicate group is decided by an ordered key list, e.g.
// "success desc, reward desc, tokens asc, id asc" (NeMo Curator's ranking
// strategy idea). A missing key sorts after every present value in either
// direction; input order breaks the last tie, so the order is total and the
// result deterministic.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"

namespace forge::dedup {

struct RankKey {
  std::string path;  // dotted field path
  bool descending = false;
};

// Parses "field [asc|desc], ..." (asc when the direction is omitted).
Result<std::vector<RankKey>> ParseRankKeys(const std::string& spec);

// Returns the order of the records, best first. Records are compared by the
// keys in turn, then by their index.
std::vector<size_t> RankOrder(const std::vector<const records::Json*>& records,
                              const std::vector<RankKey>& keys);

}  // namespace forge::dedup
