// Inner-product distance kernels for the HNSW graph (hnsw_space.h), apart
// from hnswlib so that tests can reach them without including hnswlib.
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace forge::dedup {

// 1 - <a, b> over *dim floats, with AVX2 and FMA: only where
// WideKernelAvailable().
__attribute__((target("avx2,fma"))) inline float InnerProductDistanceAvx2(const void* a_ptr, const void* b_ptr,
                                                                            const void* dim_ptr) {
  const float* a = static_cast<const float*>(a_ptr);
  const float* b = static_cast<const float*>(b_ptr);
  const size_t n = *static_cast<const size_t*>(dim_ptr);
  // Four accumulators: an FMA's latency covers four of its issue slots.
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  float dot = _mm_cvtss_f32(q);
  for (; i < n; ++i) dot += a[i] * b[i];
  return 1.0f - dot;
}

inline bool WideKernelAvailable() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

}  // namespace forge::dedup
