// The report that helps pick a threshold: kept/dropped counts at several
// thresholds from one search, and the distribution of each item's highest
// similarity (histogram and quantiles), as SemDeDup and NeMo Curator emit.
#pragma once

#include <string>
#include <vector>

#include "records/jsonl.h"

namespace forge::dedup {

struct ThresholdRow {
  float threshold;
  size_t kept;
  size_t dropped;
};

// Histogram over [0, 1] in `bins` bins (negative values count in the first)
// and the quantiles 0, .1, .25, .5, .75, .9, .95, .99, 1. Values below
// resolved_from are only known to be below it (the exact search's bound skipped
// them): they are counted as "below" and a quantile among them reads
// {"below": resolved_from} instead of a value.
records::Json Distribution(const std::vector<float>& best, int bins = 20,
                           float resolved_from = -1.0f);

// A plain-text table of the report, for stderr.
std::string FormatReport(const records::Json& report);

}  // namespace forge::dedup
