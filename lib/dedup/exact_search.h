// Exact all-pairs cosine search by blocked matrix products. The matrix of
// similarities is symmetric, so only the tiles on and above the diagonal are
// computed (ssyrk on the diagonal, sgemm above it): half the arithmetic of a
// general search such as FAISS's range search over the full square. Each tile
// is small enough to stay in cache while it is scanned for the threshold, and
// threads take tiles from a shared counter with BLAS itself single-threaded,
// so memory is bounded by one tile per thread plus the pairs found.
#pragma once

#include "base/env.h"
#include "base/status.h"
#include "dedup/similarity_graph.h"

namespace forge::dedup {

Result<SimilarityGraph> ExactSearch(const VectorSet& vectors, const SearchOptions& options, Env& env);

// Resolves options.threads (0 → hardware concurrency, at least 1).
int ThreadCount(int requested);

// Makes BLAS run on the calling thread only (forge parallelises over tiles).
void UseSingleThreadedBlas();

}  // namespace forge::dedup
