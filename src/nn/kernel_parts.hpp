// The pieces every row kernel is made of (nn/kernels.cpp, and the references of the softmax
// exercises, which keep their whole softmax to themselves): the attributes that compile a body
// once per vector width, and the plain loops those bodies share (a maximum with a NaN flag, a
// division, an eight-lane sum). None of them is an exercise's answer. n = entries of one row.
#pragma once

#include "core/portable_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

// The three copies of each kernel: the bodies below are inlined into a baseline function and into
// functions compiled for AVX2 and for AVX-512 (GCC's and Clang's `target` attribute; `flatten`
// inlines every call, portable::exp included, so that the loops vectorise at each width). Where
// there are no such attributes (not x86-64, another compiler), the baseline alone.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTN_WIDE_COPIES 1
#define ATTN_BASELINE_COPY __attribute__((flatten))
#define ATTN_AVX2_COPY __attribute__((target("avx2"), flatten))
#define ATTN_AVX512_COPY __attribute__((target("avx512f"), flatten))
// The fused copies of the fast path's kernels (Arithmetic::native in nn/kernels.hpp): the same
// widths with fused multiply-add, called only where the processor has FMA.
#define ATTN_AVX2_FMA_COPY __attribute__((target("avx2,fma"), flatten))
#define ATTN_AVX512_FMA_COPY __attribute__((target("avx512f,fma"), flatten))
#define ATTN_ALWAYS_INLINE inline __attribute__((always_inline))
#define ATTN_RESTRICT __restrict
#else
#define ATTN_WIDE_COPIES 0
#define ATTN_BASELINE_COPY
#define ATTN_ALWAYS_INLINE inline
#define ATTN_RESTRICT
#endif

namespace attn::nn::kernel_parts {

// The largest of n values, and whether one of them is NaN (NaN compares false with everything, so
// the maximum alone would pass over it). Four running maxima, because one must wait for the
// previous comparison at every step; their largest is the same number in any order.
ATTN_ALWAYS_INLINE double largest_of(const double* x, std::size_t n, bool& has_nan) {
    const double inf = std::numeric_limits<double>::infinity();
    double m0 = -inf, m1 = -inf, m2 = -inf, m3 = -inf;
    bool nan = false;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        // x != x only for NaN; no branch, so that the loop vectorises
        nan |= x[j] != x[j];
        nan |= x[j + 1] != x[j + 1];
        nan |= x[j + 2] != x[j + 2];
        nan |= x[j + 3] != x[j + 3];
        m0 = std::max(m0, x[j]);
        m1 = std::max(m1, x[j + 1]);
        m2 = std::max(m2, x[j + 2]);
        m3 = std::max(m3, x[j + 3]);
    }
    for (; j < n; ++j) {
        nan |= x[j] != x[j];
        m0 = std::max(m0, x[j]);
    }
    has_nan = nan;
    return std::max(std::max(m0, m1), std::max(m2, m3));
}

// x_j / divisor for j < n; `out` may be `x`. By a power of two (sqrt(d_k) for d_k = 4, 16, 64, ...)
// it multiplies by the reciprocal, which is then exact (unless it overflows), so the product is the
// same double as the quotient and several times cheaper. Otherwise each x_j / divisor, correctly
// rounded.
ATTN_ALWAYS_INLINE void divide(const double* x, double divisor, double* out, std::size_t n) {
    int exponent = 0;
    const double reciprocal = 1.0 / divisor;
    if (std::frexp(divisor, &exponent) == 0.5 && std::isfinite(reciprocal)) {
        for (std::size_t j = 0; j < n; ++j) out[j] = x[j] * reciprocal;
        return;
    }
    for (std::size_t j = 0; j < n; ++j) out[j] = x[j] / divisor;
}

// Eight partial sums joined pairwise (eight_lane_sum's order, also the fused online softmax's).
ATTN_ALWAYS_INLINE double joined_lanes(const double (&partial)[8]) {
    return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
           ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

// The sum of n values as eight partial sums (entry j goes to sum j mod 8), joined pairwise, then the
// rest in order: added one by one, each addition would wait for the previous one; eight sums make
// one or two vector additions per eight entries, and the same numbers whatever the vector width.
ATTN_ALWAYS_INLINE double eight_lane_sum(const double* x, std::size_t n) {
    double partial[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (std::size_t lane = 0; lane < 8; ++lane) partial[lane] += x[j + lane];
    double total = joined_lanes(partial);
    for (; j < n; ++j) total += x[j];
    return total;
}

}  // namespace attn::nn::kernel_parts
