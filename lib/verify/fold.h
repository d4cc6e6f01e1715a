// One verdict per rollout: a rollout verified twice (a killed run's partial
// output concatenated with its rerun's, or the same file read twice) counts
// once, with its last verdict.
#pragma once

#include <cstddef>
#include <vector>

#include "records/jsonl.h"
#include "verify/metrics.h"

namespace forge::verify {

// Keeps, for every rollout id, the last trial read, at the place of the
// first (its `folded` counts the verdicts it replaced); trials without a
// rollout id are all kept. records, when given, is
// parallel to trials and folded alike. Returns how many trials were folded.
size_t FoldByRollout(std::vector<Trial>* trials, std::vector<records::Json>* records = nullptr);

}  // namespace forge::verify
