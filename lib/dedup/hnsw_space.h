// hnswlib's inner-product space with the widest distance kernel this CPU
// runs. hnswlib chooses its AVX kernels only when the file including it is
// compiled with -mavx, which lets the compiler use AVX anywhere in that file
// (and the binary then dies on a CPU without it), so forge's library gets its
// SSE kernels. A kernel with its own target attribute, picked at run time,
// needs neither: distances are most of an HNSW build's and query's time.
//
// Header-only on purpose: hnswlib's header defines non-inline functions, so
// the library includes it from one file only (lib/dedup/hnsw_search.cpp);
// bench-hnsw_sweep, which includes it too, is linked to allow the second copy.
#pragma once

#include <hnswlib/hnswlib.h>

#include <cstddef>
#include <string>

#include "dedup/inner_product_kernel.h"

namespace forge::dedup {

class InnerProductSpace : public hnswlib::SpaceInterface<float> {
 public:
  // allow_wide = false keeps hnswlib's own kernel (for comparisons).
  explicit InnerProductSpace(size_t dim, bool allow_wide = true) : dim_(dim), hnswlib_space_(dim) {
    distance_ = hnswlib_space_.get_dist_func();
    if (allow_wide && WideKernelAvailable()) {
      distance_ = InnerProductDistanceAvx2;
      kernel_ = "avx2+fma";
    }
  }

  size_t get_data_size() override { return dim_ * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return distance_; }
  void* get_dist_func_param() override { return &dim_; }

  // "avx2+fma", or "hnswlib" for hnswlib's own choice.
  const std::string& kernel() const { return kernel_; }

 private:
  size_t dim_;
  hnswlib::InnerProductSpace hnswlib_space_;
  hnswlib::DISTFUNC<float> distance_;
  std::string kernel_ = "hnswlib";
};

}  // namespace forge::dedup
