#include "nn/kernels.hpp"

#include "core/portable_math.hpp"
#include "nn/kernel_parts.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

// The three copies of each kernel, from the attributes of nn/kernel_parts.hpp: each body below is
// inlined into a baseline function and into functions compiled for AVX2 and for AVX-512.

// GCC's loop vectoriser (at the -O3 of this file) would turn the k loop of a register tile into
// an in-order vector reduction and leave the tile's accumulators in memory: four times slower. The
// tiles are vectorised across their 8 columns instead (the unrolled inner loops), so the matrix
// product's copies are compiled without it; the sums are the same either way.
#if defined(__GNUC__) && !defined(__clang__)
#define ATTN_NO_LOOP_VECTORIZE __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define ATTN_NO_LOOP_VECTORIZE
#endif

namespace attn::nn {

namespace {

using namespace kernel_parts;

ATTN_ALWAYS_INLINE void exp_body(const double* x, double* out, std::size_t n) {
    // clamped first, in a loop of its own: with the comparisons in the loop of the exp, the
    // compiler would give each side its own copy of the exp and not vectorise it
    for (std::size_t j = 0; j < n; ++j) out[j] = portable::exp_input(x[j]);
    for (std::size_t j = 0; j < n; ++j) out[j] = portable::exp_of_clamped(out[j]);
}

// C = A B by register blocks: a tile of MR rows x 8 NP columns of C is held in MR x 8 NP local
// accumulators (vector registers once the compiler unrolls the inner loops) while p runs over the
// k products, so that C is written once per tile instead of once per product. B comes packed
// (matmul_pack): each 8 columns of a tile as one contiguous k x 8 block, read straight through (NP
// neighbouring panels, panel_stride apart; each a of the tile then feeds NP vectors' products).
// Every c_ij is still 0, then + a_i0 b_0j, + a_i1 b_1j, ..., in the order of p, in one accumulator
// of its own: the numbers of the textbook triple loop, whatever MR, the vector width or the blocks
// of k (a partial sum stored in C and loaded again is the same double).
// With `from_C` the tile starts from the values in C instead of 0 (C += A B).
// `Fused` (the native copies only, compiled for FMA): c_ij = fma(a_ip, b_pj, c_ij), one rounding per
// product instead of two, in the same order of p. Not the textbook loop's bits: never for a number
// a lesson records.
// T = float (Arithmetic::single): A and the panels already rounded to float32, the sums in float32, C
// still doubles (a float32 partial sum stored there and loaded again is the same float).
template <std::size_t MR, bool Fused = false, std::size_t NP = 1, class T = double>
ATTN_ALWAYS_INLINE void matmul_tile(const T* ATTN_RESTRICT A, std::size_t lda, const T* ATTN_RESTRICT panel,
                                    std::size_t k, double* ATTN_RESTRICT C, std::size_t ldc, bool from_C,
                                    std::size_t panel_stride = 0) {
    constexpr std::size_t NR = matmul_panel_width;
    T acc[MR][NP][NR];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NP; ++v)
#pragma GCC unroll 16
            for (std::size_t c = 0; c < NR; ++c) acc[r][v][c] = from_C ? static_cast<T>(C[r * ldc + v * NR + c]) : T(0);
    for (std::size_t p = 0; p < k; ++p) {
#pragma GCC unroll 16
        for (std::size_t r = 0; r < MR; ++r) {
            const T a = A[r * lda + p];
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NP; ++v) {
                const T* ATTN_RESTRICT b = panel + v * panel_stride + p * NR;
#pragma GCC unroll 16
                for (std::size_t c = 0; c < NR; ++c) {
                    if constexpr (Fused)
                        acc[r][v][c] = std::fma(a, b[c], acc[r][v][c]);
                    else
                        acc[r][v][c] += a * b[c];
                }
            }
        }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NP; ++v)
#pragma GCC unroll 16
            for (std::size_t c = 0; c < NR; ++c) C[r * ldc + v * NR + c] = acc[r][v][c];
}

// The last panel when it is short (cols < 8 columns of C): one row at a time through an 8-wide
// scratch row, so that the tile never writes past C's columns.
template <bool Fused, class T = double>
ATTN_ALWAYS_INLINE void matmul_short_tile(const T* A, std::size_t lda, const T* panel, std::size_t k, double* C,
                                          std::size_t ldc, std::size_t rows, std::size_t cols, bool from_C) {
    double scratch[matmul_panel_width] = {};
    for (std::size_t i = 0; i < rows; ++i) {
        if (from_C) std::copy(C + i * ldc, C + i * ldc + cols, scratch);
        matmul_tile<1, Fused, 1, T>(A + i * lda, lda, panel, k, scratch, matmul_panel_width, from_C);
        std::copy(scratch, scratch + cols, C + i * ldc);
    }
}

// C (rows x n, row stride ldc) = A (rows x k, row stride lda) times the packed B (see
// matmul_packed in nn/kernels.hpp), or C += A B with `accumulate`. Blocks of 64 rows, and in each
// the products in blocks of 128 values of p (the block of A stays in the second-level cache, a
// panel's slice in the first), NP panels at a time (then the rest panel by panel), MR rows at a time
// and the last rows one by one; each entry's sum runs on from the block before. T as matmul_tile's.
template <std::size_t MR, bool Fused = false, std::size_t NP = 1, class T = double>
ATTN_ALWAYS_INLINE void matmul_packed_body(const T* A, std::size_t lda, const T* panels, std::size_t panel_stride,
                                           double* C, std::size_t ldc, std::size_t rows, std::size_t k, std::size_t n,
                                           bool accumulate) {
    constexpr std::size_t NR = matmul_panel_width, k_block = 128, row_block = 64;
    if (k == 0) {
        if (!accumulate)
            for (std::size_t i = 0; i < rows; ++i) std::fill(C + i * ldc, C + i * ldc + n, 0.0);
        return;
    }
    for (std::size_t i0 = 0; i0 < rows; i0 += row_block) {
        const std::size_t block_rows = std::min(row_block, rows - i0);
        const T* A_block = A + i0 * lda;
        double* C_block = C + i0 * ldc;
        for (std::size_t p0 = 0; p0 < k; p0 += k_block) {
            const std::size_t depth = std::min(k_block, k - p0);
            const bool from_C = accumulate || p0 > 0;
            std::size_t j0 = 0;
            if constexpr (NP > 1)
                for (; j0 + NP * NR <= n; j0 += NP * NR) {
                    const T* panel = panels + (j0 / NR) * panel_stride + p0 * NR;
                    std::size_t i = 0;
                    for (; i + MR <= block_rows; i += MR)
                        matmul_tile<MR, Fused, NP, T>(A_block + i * lda + p0, lda, panel, depth, C_block + i * ldc + j0,
                                                   ldc, from_C, panel_stride);
                    for (; i < block_rows; ++i)
                        matmul_tile<1, Fused, NP, T>(A_block + i * lda + p0, lda, panel, depth, C_block + i * ldc + j0,
                                                  ldc, from_C, panel_stride);
                }
            for (; j0 < n; j0 += NR) {
                const T* panel = panels + (j0 / NR) * panel_stride + p0 * NR;
                if (n - j0 < NR) {
                    matmul_short_tile<Fused, T>(A_block + p0, lda, panel, depth, C_block + j0, ldc, block_rows, n - j0,
                                             from_C);
                    continue;
                }
                std::size_t i = 0;
                for (; i + MR <= block_rows; i += MR)
                    matmul_tile<MR, Fused, 1, T>(A_block + i * lda + p0, lda, panel, depth, C_block + i * ldc + j0, ldc,
                                           from_C);
                for (; i < block_rows; ++i)
                    matmul_tile<1, Fused, 1, T>(A_block + i * lda + p0, lda, panel, depth, C_block + i * ldc + j0, ldc,
                                          from_C);
            }
        }
    }
}

// Row i of C = A B for a few columns (n below one panel, as in a matrix-vector product, where
// packing would pad every row of B to 8 columns): c_j = 0, then c_j += a_p B_pj in the order of p.
ATTN_ALWAYS_INLINE void matmul_narrow_body(const double* ATTN_RESTRICT A, const double* ATTN_RESTRICT B,
                                           double* ATTN_RESTRICT C, std::size_t rows, std::size_t k, std::size_t n) {
    for (std::size_t i = 0; i < rows; ++i) {
        double* ATTN_RESTRICT c = C + i * n;
        for (std::size_t j = 0; j < n; ++j) c[j] = 0.0;
        for (std::size_t p = 0; p < k; ++p) {
            const double a = A[i * k + p];
            const double* ATTN_RESTRICT b = B + p * n;
            for (std::size_t j = 0; j < n; ++j) c[j] += a * b[j];
        }
    }
}

// One row of a tile of scores for nn::fast_attention (see online_softmax_row in nn/kernels.hpp).
ATTN_ALWAYS_INLINE double online_softmax_row_body(double* s, std::size_t n, double& running_max,
                                                  double& running_sum) {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    bool has_nan = false;
    const double largest = std::max(running_max, n > 0 ? largest_of(s, n, has_nan) : minus_inf);
    if (largest == minus_inf) {  // nothing seen yet but masked keys: nothing to add, nothing to rescale
        std::fill(s, s + n, 0.0);
        return 1.0;
    }
    const double factor = running_max == minus_inf ? 0.0 : portable::exp(running_max - largest);
    for (std::size_t j = 0; j < n; ++j) s[j] = portable::exp_input(s[j] - largest);
    for (std::size_t j = 0; j < n; ++j) s[j] = portable::exp_of_clamped(s[j]);
    const double total = eight_lane_sum(s, n);
    running_sum = running_sum * factor + total;
    running_max = largest;
    return has_nan ? std::numeric_limits<double>::quiet_NaN() : factor;
}

// ---- The native (fused) fast path: Arithmetic::native in nn/kernels.hpp. Compiled only into the
// copies for FMA; its numbers are within a few ulp of the portable kernels' but not the same bits.

// exp(x) for x in [-746, 710] or NaN (portable::exp_input's clamp first), as portable::exp_of_clamped
// computes it but with fused multiply-adds: the reduction x = k ln2 + r in three fused steps, and
// exp(r) by a polynomial of degree 11 in Horner form, 11 fused steps where the portable exp takes 14
// multiplications and 14 additions. The polynomial is the minimax one for the relative error on
// |r| <= ln2 / 2 (tests/bench/fused_exp_remez.py: Remez exchange in 60-digit arithmetic; the
// constant and linear coefficients round to exactly 1, so exp(0) = 1): within 2.3e-17 of exp(r) with
// its coefficients rounded to doubles, where the Taylor polynomial of degree 12 that it replaced left
// out up to |r|^13 / 13! = 1.7e-16 (most of an ulp) for one more step. With the roundings the result
// is within 1 ulp of exp(x) (2 ulp with the Taylor polynomial) on 4 million points from -746 to 0
// (tests/test_online_softmax.cpp holds it to that; it also compares the fast path with the plain form).
ATTN_ALWAYS_INLINE double fused_exp_of_clamped(double x) {
    constexpr double log2e = 1.4426950408889634;
    const double shifted = std::fma(x, log2e, portable::detail::round_shifter);
    const double k = shifted - portable::detail::round_shifter;
    const double r = std::fma(-k, portable::detail::ln2_lo, std::fma(-k, portable::detail::ln2_hi, x));
    double p = 2.4994304242588155e-08;
    p = std::fma(p, r, 2.763229328352441e-07);
    p = std::fma(p, r, 2.755762253283541e-06);
    p = std::fma(p, r, 2.4801486521416967e-05);
    p = std::fma(p, r, 0.0001984126943267712);
    p = std::fma(p, r, 0.0013888888951223996);
    p = std::fma(p, r, 0.008333333333559272);
    p = std::fma(p, r, 0.04166666666649277);
    p = std::fma(p, r, 0.1666666666666617);
    p = std::fma(p, r, 0.5000000000000018);
    p = std::fma(p, r, 1.0);
    p = std::fma(p, r, 1.0);
    // exp(r) 2^k, as portable::exp_of_clamped (subnormal and zero results rounded once)
    return portable::detail::times_power_of_two(p, shifted);
}

#if ATTN_WIDE_COPIES  // GCC's and Clang's vector extension, and only the fused copies use it
// W doubles as one value of GCC's and Clang's vector extension, compared and selected lane by lane:
// W = 8 is one register with AVX-512, W = 4 one with AVX2 (an 8-wide value there is slower than two
// 4-wide ones).
template <std::size_t W>
struct VectorOf;
template <>
struct VectorOf<4> {
    typedef double type __attribute__((vector_size(4 * sizeof(double))));
};
template <>
struct VectorOf<8> {
    typedef double type __attribute__((vector_size(8 * sizeof(double))));
};
template <std::size_t W>
using Doubles = typename VectorOf<W>::type;

// online_softmax_row_body's result by the fused exp, in two passes over s: the maximum as eight
// running maxima side by side (held as 8 / W vectors of W lanes: the vectoriser left this loop
// scalar, as NaN is honoured), then the exponentials with their sum. A NaN is passed over by the
// maxima and caught by the sum instead: exp(NaN) makes the total NaN.
template <std::size_t W>
ATTN_ALWAYS_INLINE double online_softmax_row_fused_body(double* s, std::size_t n, double& running_max,
                                                        double& running_sum) {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    Doubles<W> lane_max[8 / W];
    for (auto& m : lane_max)
        for (std::size_t lane = 0; lane < W; ++lane) m[lane] = minus_inf;
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (std::size_t v = 0; v < 8 / W; ++v) {
            Doubles<W> x;
            std::memcpy(&x, s + j + v * W, sizeof x);
            lane_max[v] = x > lane_max[v] ? x : lane_max[v];
        }
    double largest = running_max;
    for (const auto& m : lane_max)
        for (std::size_t lane = 0; lane < W; ++lane) largest = std::max(largest, m[lane]);
    for (; j < n; ++j) largest = std::max(largest, s[j]);
    if (largest == minus_inf) {  // nothing seen yet but masked keys: nothing to add, nothing to rescale
        std::fill(s, s + n, 0.0);
        return 1.0;
    }
    const double factor =
        running_max == minus_inf ? 0.0 : fused_exp_of_clamped(portable::exp_input(running_max - largest));
    // s_j - largest <= 0 (or NaN), clamped below only; the exp of eight entries side by side, each
    // added to its own partial sum, in one pass (eight_lane_sum's order)
    double partial[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    j = 0;
    for (; j + 8 <= n; j += 8)
        for (std::size_t lane = 0; lane < 8; ++lane) {
            const double x = s[j + lane] - largest;
            const double e = fused_exp_of_clamped(x < -746.0 ? -746.0 : x);
            s[j + lane] = e;
            partial[lane] += e;
        }
    double total = joined_lanes(partial);
    for (; j < n; ++j) {
        s[j] = fused_exp_of_clamped(portable::exp_input(s[j] - largest));
        total += s[j];
    }
    running_sum = running_sum * factor + total;
    running_max = largest;
    return total != total ? std::numeric_limits<double>::quiet_NaN() : factor;
}

#endif

// exp_body's result by the fused exp: clamped first, in a loop of its own, as there.
ATTN_ALWAYS_INLINE void exp_fused_body(const double* x, double* out, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) out[j] = portable::exp_input(x[j]);
    for (std::size_t j = 0; j < n; ++j) out[j] = fused_exp_of_clamped(out[j]);
}

// One copy of every kernel, for one vector width.
struct Kernels {
    void (*exp)(const double*, double*, std::size_t);
    void (*matmul_packed)(const double*, std::size_t, const double*, std::size_t, double*, std::size_t, std::size_t,
                          std::size_t, std::size_t, bool);
    void (*matmul_narrow)(const double*, const double*, double*, std::size_t, std::size_t, std::size_t);
    double (*online_softmax_row)(double*, std::size_t, double&, double&);
    // Arithmetic::native, for processors with FMA; nullptr in the baseline copy (native is portable there)
    void (*matmul_packed_fused)(const double*, std::size_t, const double*, std::size_t, double*, std::size_t,
                                std::size_t, std::size_t, std::size_t, bool) = nullptr;
    double (*online_softmax_row_fused)(double*, std::size_t, double&, double&) = nullptr;
    void (*exp_fused)(const double*, double*, std::size_t) = nullptr;
    // Arithmetic::single: unfused in every copy, fused (FMA) in the wide ones
    void (*matmul_single)(const float*, std::size_t, const float*, std::size_t, double*, std::size_t, std::size_t,
                          std::size_t, std::size_t, bool) = nullptr;
    void (*matmul_single_fused)(const float*, std::size_t, const float*, std::size_t, double*, std::size_t,
                                std::size_t, std::size_t, std::size_t, bool) = nullptr;
};

#define ATTN_KERNEL_COPY(suffix, attributes, tile_rows)                                                       \
    attributes void exp_##suffix(const double* x, double* out, std::size_t n) { exp_body(x, out, n); }        \
    attributes ATTN_NO_LOOP_VECTORIZE void matmul_packed_##suffix(const double* A, std::size_t lda, const double* panels,            \
                                           std::size_t panel_stride, double* C, std::size_t ldc,               \
                                           std::size_t rows, std::size_t k, std::size_t n, bool accumulate) {  \
        matmul_packed_body<tile_rows>(A, lda, panels, panel_stride, C, ldc, rows, k, n, accumulate);          \
    }                                                                                                         \
    attributes void matmul_narrow_##suffix(const double* A, const double* B, double* C, std::size_t rows,    \
                                           std::size_t k, std::size_t n) {                                    \
        matmul_narrow_body(A, B, C, rows, k, n);                                                              \
    }                                                                                                         \
    attributes double online_softmax_row_##suffix(double* s, std::size_t n, double& running_max,             \
                                                  double& running_sum) {                                      \
        return online_softmax_row_body(s, n, running_max, running_sum);                                       \
    }                                                                                                         \
    attributes ATTN_NO_LOOP_VECTORIZE void matmul_single_##suffix(                                           \
        const float* A, std::size_t lda, const float* panels, std::size_t panel_stride, double* C,           \
        std::size_t ldc, std::size_t rows, std::size_t k, std::size_t n, bool accumulate) {                   \
        matmul_packed_body<tile_rows, false, 1, float>(A, lda, panels, panel_stride, C, ldc, rows, k, n, accumulate); \
    }

// The fused kernels of one vector width (Arithmetic::native), compiled for FMA.
#define ATTN_FUSED_COPY(suffix, attributes, tile_rows, tile_panels, lanes)                                                       \
    attributes ATTN_NO_LOOP_VECTORIZE void matmul_packed_fused_##suffix(                                     \
        const double* A, std::size_t lda, const double* panels, std::size_t panel_stride, double* C,          \
        std::size_t ldc, std::size_t rows, std::size_t k, std::size_t n, bool accumulate) {                    \
        matmul_packed_body<tile_rows, true, tile_panels>(A, lda, panels, panel_stride, C, ldc, rows, k, n, accumulate);    \
    }                                                                                                         \
    attributes double online_softmax_row_fused_##suffix(double* s, std::size_t n, double& running_max,       \
                                                        double& running_sum) {                                \
        return online_softmax_row_fused_body<lanes>(s, n, running_max, running_sum);                          \
    }                                                                                                         \
    attributes void exp_fused_##suffix(const double* x, double* out, std::size_t n) {                          \
        exp_fused_body(x, out, n);                                                                            \
    }                                                                                                         \
    attributes ATTN_NO_LOOP_VECTORIZE void matmul_single_fused_##suffix(                                     \
        const float* A, std::size_t lda, const float* panels, std::size_t panel_stride, double* C,           \
        std::size_t ldc, std::size_t rows, std::size_t k, std::size_t n, bool accumulate) {                   \
        matmul_packed_body<4, true, single_panels, float>(A, lda, panels, panel_stride, C, ldc, rows, k, n,   \
                                                          accumulate);                                        \
    }

#define ATTN_KERNELS_OF(suffix, fused_matmul, fused_softmax_row, fused_exp, fused_single)              \
    constexpr Kernels kernels_##suffix{exp_##suffix,                                                      \
                                       matmul_packed_##suffix, matmul_narrow_##suffix, online_softmax_row_##suffix, \
                                       fused_matmul,           fused_softmax_row,      fused_exp,        \
                                       matmul_single_##suffix, fused_single};

// Tiles of 2 x 8 in SSE2's sixteen 2-wide registers, 4 x 8 with AVX2 and AVX-512 (8 accumulators of 4
// or 4 of 8 doubles, and room for the row of B and the broadcast a). The fused tiles: 4 x 8 with AVX2
// (8 accumulators of 4 doubles in its sixteen registers), 8 x 16 with AVX-512 (two panels: 16
// accumulators of 8 doubles in its 32, each broadcast a feeding two fused multiply-adds; enough
// products in flight for two FMA units of latency 4, as Intel's AVX-512 processors have). On the
// project's AMD EPYC (Zen 5), one thread at T = 1024, d = 64 (Q K^T and P V in fast_attention's
// tiles): 8 x 16 took 2.05 ms where 8 x 8 took 2.75 (OpenBLAS's Cooperlake dgemm 2.82); 4 x 32 was
// as fast, 8 x 24, 12 x 16, 6 x 16 and 4 x 24 slower. With AVX2 4 x 8 runs at the processor's peak
// there (two 256-bit FMAs per cycle); 6 x 8 was 3% slower, 3 x 16 4% and 5 x 8 6%.
// These figures are GCC 12's. Clang 14 compiles the two-panel tile with its accumulators copied from
// register to register at every step: 4.8 ms, where its 8 x 8 tile takes 3.2 ms (as before the wider
// tile); so a Clang build keeps one panel (the same sums in the same order: the same bits).
#if defined(__clang__)
constexpr std::size_t avx512_fused_panels = 1;
#else
constexpr std::size_t avx512_fused_panels = 2;
#endif
// float32 tiles of 4 rows x 2 panels (16 columns): 8 accumulators of 8 floats with AVX2, as its double tile
// has 8 of 4 doubles.
constexpr std::size_t single_panels = 2;
ATTN_KERNEL_COPY(baseline, ATTN_BASELINE_COPY, 2)
ATTN_KERNELS_OF(baseline, nullptr, nullptr, nullptr, nullptr)
#if ATTN_WIDE_COPIES
ATTN_KERNEL_COPY(avx2, ATTN_AVX2_COPY, 4)
ATTN_FUSED_COPY(avx2, ATTN_AVX2_FMA_COPY, 4, 1, 4)
ATTN_KERNELS_OF(avx2, matmul_packed_fused_avx2, online_softmax_row_fused_avx2, exp_fused_avx2,
                matmul_single_fused_avx2)
ATTN_KERNEL_COPY(avx512, ATTN_AVX512_COPY, 4)
ATTN_FUSED_COPY(avx512, ATTN_AVX512_FMA_COPY, 8, avx512_fused_panels, 8)
ATTN_KERNELS_OF(avx512, matmul_packed_fused_avx512, online_softmax_row_fused_avx512, exp_fused_avx512,
                matmul_single_fused_avx512)
#endif

const Kernels& kernels_of(KernelPath path) {
#if ATTN_WIDE_COPIES
    if (path == KernelPath::avx2) return kernels_avx2;
    if (path == KernelPath::avx512) return kernels_avx512;
#endif
    (void)path;
    return kernels_baseline;
}

bool supported(KernelPath path) {
    if (path == KernelPath::baseline) return true;
#if ATTN_WIDE_COPIES
    __builtin_cpu_init();
    if (path == KernelPath::avx2) return __builtin_cpu_supports("avx2");
    if (path == KernelPath::avx512) return __builtin_cpu_supports("avx512f");
#endif
    return false;
}

const KernelPath all_paths[] = {KernelPath::baseline, KernelPath::avx2, KernelPath::avx512};

// ATTN_KERNELS as a path; false when it is unset or names no path
bool requested_path(KernelPath& path) {
    const char* name = std::getenv("ATTN_KERNELS");
    if (!name || !*name) return false;
    for (const KernelPath p : all_paths)
        if (std::string(name) == kernel_path_name(p)) {
            path = p;
            return true;
        }
    return false;
}

KernelPath initial_path() {
    KernelPath path = KernelPath::baseline;
    if (requested_path(path) && supported(path)) return path;
    return kernel_paths_supported().back();
}

// The copy in use: the one state, from which the kernels are looked up at every call (a switch).
std::atomic<KernelPath>& current_path() {
    static std::atomic<KernelPath> path{initial_path()};
    return path;
}

const Kernels& active() { return kernels_of(current_path().load(std::memory_order_relaxed)); }

bool processor_has_fma() {
#if ATTN_WIDE_COPIES
    static const bool fma = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("fma") != 0;
    }();
    return fma;
#else
    return false;
#endif
}

}  // namespace

const char* kernel_path_name(KernelPath path) {
    switch (path) {
        case KernelPath::avx2: return "avx2";
        case KernelPath::avx512: return "avx512";
        default: return "baseline";
    }
}

std::vector<KernelPath> kernel_paths_supported() {
    std::vector<KernelPath> out;
    for (const KernelPath p : all_paths)
        if (supported(p)) out.push_back(p);
    return out;
}

KernelPath kernel_path() { return current_path().load(); }

std::string kernel_path_problem() {
    const char* name = std::getenv("ATTN_KERNELS");
    if (!name || !*name) return "";
    KernelPath path = KernelPath::baseline;
    if (!requested_path(path)) return "ATTN_KERNELS must be baseline, avx2 or avx512 (or unset)";
    if (!supported(path))
        return std::string("ATTN_KERNELS=") + kernel_path_name(path) + ": this processor cannot run that copy";
    return "";
}

void use_kernel_path(KernelPath path) {
    if (!supported(path))
        throw std::invalid_argument(std::string("this processor cannot run the ") + kernel_path_name(path) +
                                    " kernels");
    current_path().store(path);
}



namespace {

// Columns [0, n) of the k rows of B (row stride ldb) packed as matmul_pack packs a k x n matrix.
void matmul_pack_block(const double* B, std::size_t ldb, std::size_t k, std::size_t n, double* panels) {
    constexpr std::size_t NR = matmul_panel_width;
    for (std::size_t j0 = 0; j0 < n; j0 += NR) {
        double* panel = panels + j0 * k;
        const std::size_t cols = std::min(NR, n - j0);
        if (cols == NR) {  // eight values a row, copied inline: a call of memmove for each cost more than the copy
            for (std::size_t p = 0; p < k; ++p)
                for (std::size_t c = 0; c < NR; ++c) panel[p * NR + c] = B[p * ldb + j0 + c];
            continue;
        }
        for (std::size_t p = 0; p < k; ++p)
            for (std::size_t c = 0; c < NR; ++c) panel[p * NR + c] = c < cols ? B[p * ldb + j0 + c] : 0.0;
    }
}

// Columns [0, n) of B^T packed as matmul_pack packs a k x n matrix, for B: n x k with row stride ldb.
void matmul_pack_transposed_block(const double* B, std::size_t ldb, std::size_t k, std::size_t n, double* panels) {
    constexpr std::size_t NR = matmul_panel_width;
    for (std::size_t j0 = 0; j0 < n; j0 += NR) {
        double* panel = panels + j0 * k;
        const std::size_t cols = std::min(NR, n - j0);
        for (std::size_t c = 0; c < NR; ++c) {
            if (c >= cols) {
                for (std::size_t p = 0; p < k; ++p) panel[p * NR + c] = 0.0;
                continue;
            }
            const double* row = B + (j0 + c) * ldb;
            for (std::size_t p = 0; p < k; ++p) panel[p * NR + c] = row[p];
        }
    }
}

// The products' shared blocking (see matmul_span): B a block of 256 columns at a time, packed by `pack`
// (column offset, columns, panels) into the calling thread's kept buffer, groups of panels on the threads;
// then blocks of 16 rows to the threads. T: the operands' element type (float for Arithmetic::single: A
// and the panels already rounded to it), C being doubles either way.
template <class T, class Pack, class Product>
void packed_blocks(const T* A, double* C, std::size_t m, std::size_t k, std::size_t n, const Pack& pack,
                   const Product& product) {
    constexpr std::size_t columns_per_block = 256, rows_per_block = 16;
    thread_local std::vector<T> kept_panels;
    const std::size_t packed = matmul_packed_size(k, std::min(n, columns_per_block));
    if (kept_panels.size() < packed) kept_panels.resize(packed);
    // this thread's buffer, by address: in the helper thread below the name kept_panels is the helper's own
    T* const panels = kept_panels.data();
    const std::size_t blocks = (m + rows_per_block - 1) / rows_per_block;
    for (std::size_t j0 = 0; j0 < n; j0 += columns_per_block) {
        const std::size_t cols = std::min(columns_per_block, n - j0);
        // eight panels of eight columns at a time to the threads (each panel is its own copy)
        constexpr std::size_t columns_per_group = 8 * matmul_panel_width;
        for_each_row((cols + columns_per_group - 1) / columns_per_group, k * columns_per_group, [&](std::size_t g) {
            const std::size_t first = g * columns_per_group;
            pack(j0 + first, std::min(columns_per_group, cols - first), panels + first * k);
        });
        // a block's work in multiply-adds, counted as for_each_row counts entries (a thread repays
        // itself from about 2^15 entries of a softmax, about 2^18 multiply-adds)
        const std::size_t work = std::max<std::size_t>(1, rows_per_block * k * cols / 8);
        for_each_row(blocks, work, [&](std::size_t b) {
            const std::size_t first = b * rows_per_block, rows = std::min(rows_per_block, m - first);
            product(A + first * k, k, panels, k * matmul_panel_width, C + first * n + j0, n, rows, k, cols,
                    false);
        });
    }
}

// Columns [0, n) of the k rows of B (row stride ldb), rounded to float32, in matmul_pack's layout; with
// `transposed`, columns [0, n) of B^T for B: n x k.
void pack_single_block(const double* B, std::size_t ldb, std::size_t k, std::size_t n, bool transposed,
                       float* panels) {
    constexpr std::size_t NR = matmul_panel_width;
    for (std::size_t j0 = 0; j0 < n; j0 += NR) {
        float* panel = panels + j0 * k;
        const std::size_t cols = std::min(NR, n - j0);
        for (std::size_t p = 0; p < k; ++p)
            for (std::size_t c = 0; c < NR; ++c)
                panel[p * NR + c] = c >= cols    ? 0.0f
                                    : transposed ? static_cast<float>(B[(j0 + c) * ldb + p])
                                                 : static_cast<float>(B[p * ldb + j0 + c]);
    }
}

// matmul_span and matmul_transposed_span in Arithmetic::single: A rounded to float32 once, B's panels
// rounded as packed_blocks packs them.
void single_product(const double* A, const double* B, std::size_t ldb, bool transposed, double* C, std::size_t m,
                    std::size_t k, std::size_t n) {
    constexpr std::size_t rows_per_block = 16;
    const Kernels& kernels = active();
    thread_local std::vector<float> kept_A;
    if (kept_A.size() < m * k) kept_A.resize(m * k);
    float* const A_single = kept_A.data();  // this thread's buffer, by address (as in packed_blocks)
    for_each_row((m + rows_per_block - 1) / rows_per_block, rows_per_block * k, [&](std::size_t b) {
        const std::size_t first = b * rows_per_block, last = std::min(m, first + rows_per_block);
        for (std::size_t e = first * k; e < last * k; ++e) A_single[e] = static_cast<float>(A[e]);
    });
    packed_blocks(
        static_cast<const float*>(A_single), C, m, k, n,
        [&](std::size_t j0, std::size_t cols, float* panels) {
            pack_single_block(transposed ? B + j0 * ldb : B + j0, ldb, k, cols, transposed, panels);
        },
        processor_has_fma() && kernels.matmul_single_fused ? kernels.matmul_single_fused : kernels.matmul_single);
}

}  // namespace

void matmul_pack(const double* B, std::size_t k, std::size_t n, double* panels) {
    matmul_pack_block(B, n, k, n, panels);
}

bool native_is_fused() { return processor_has_fma() && active().matmul_packed_fused != nullptr; }

namespace {

// Whether `arithmetic` takes the fused copies here.
bool fused(Arithmetic arithmetic) { return arithmetic == Arithmetic::native && native_is_fused(); }

// The product kernel `arithmetic` takes in `kernels`.
auto packed_product(const Kernels& kernels, Arithmetic arithmetic) {
    return fused(arithmetic) ? kernels.matmul_packed_fused : kernels.matmul_packed;
}

}  // namespace

void matmul_packed(const double* A, std::size_t lda, const double* panels, std::size_t panel_stride, double* C,
                   std::size_t ldc, std::size_t m, std::size_t k, std::size_t n, bool accumulate,
                   Arithmetic arithmetic) {
    packed_product(active(), arithmetic)(A, lda, panels, panel_stride, C, ldc, m, k, n, accumulate);
}

void matmul_span(const double* A, const double* B, double* C, std::size_t m, std::size_t k, std::size_t n,
                 Arithmetic arithmetic) {
    const Kernels& kernels = active();
    const auto product = packed_product(kernels, arithmetic);
    if (arithmetic == Arithmetic::single && n >= matmul_panel_width) {
        single_product(A, B, n, false, C, m, k, n);
        return;
    }
    // A few columns (a matrix-vector product), or a few rows without the fused arithmetic (a decoder's
    // step: one query, or a beam's k): B as it is, rows on two threads when large. Packing B would copy
    // as many values as such a product multiplies (it was a quarter of lesson 13's beam search). Each
    // entry's sum is the packed kernels' own, c = 0 then c += a_p B_pj in the order of p, so the bits do not
    // depend on which path a product takes; the fused kernels round otherwise, and keep the packed path.
    constexpr std::size_t few_rows = 4;
    if (n < matmul_panel_width || (m <= few_rows && !fused(arithmetic))) {
        for_each_row(m, std::max<std::size_t>(1, k * n / 8),
                     [&](std::size_t i) { kernels.matmul_narrow(A + i * k, B, C + i * n, 1, k, n); });
        return;
    }
    // B packed a block of 256 columns at a time (k x 256 doubles besides the operands, whatever n),
    // for both threads; blocks of 16 rows go to the threads, each reading the panels once. The panels'
    // buffer is kept by the calling thread from one product to the next: training multiplies small
    // matrices thousands of times a second, and allocating it each time cost lesson 12 a tenth of its
    // training (the buffer keeps the largest size asked, k x 256 doubles at most).
    packed_blocks(A, C, m, k, n,
                  [&](std::size_t j0, std::size_t cols, double* panels) { matmul_pack_block(B + j0, n, k, cols, panels); },
                  product);
}

void matmul_transposed_span(const double* A, const double* B, std::size_t ldb, double* C, std::size_t m,
                            std::size_t k, std::size_t n, Arithmetic arithmetic) {
    const Kernels& kernels = active();
    if (arithmetic == Arithmetic::single && n >= matmul_panel_width) {
        single_product(A, B, ldb, true, C, m, k, n);
        return;
    }
    constexpr std::size_t few_rows = 4;
    if (n < matmul_panel_width || (m <= few_rows && !fused(arithmetic))) {
        // matmul_span's path for a few rows or columns, on B^T written out (k x n)
        thread_local std::vector<double> B_t;
        B_t.resize(k * n);
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t p = 0; p < k; ++p) B_t[p * n + j] = B[j * ldb + p];
        const double* const transposed = B_t.data();  // this thread's, by address (as in matmul_span)
        for_each_row(m, std::max<std::size_t>(1, k * n / 8),
                     [&](std::size_t i) { kernels.matmul_narrow(A + i * k, transposed, C + i * n, 1, k, n); });
        return;
    }
    packed_blocks(A, C, m, k, n,
                  [&](std::size_t j0, std::size_t cols, double* panels) {
                      matmul_pack_transposed_block(B + j0 * ldb, ldb, k, cols, panels);
                  },
                  packed_product(kernels, arithmetic));
}

void exp_span(const double* x, double* out, std::size_t n, Arithmetic arithmetic) {
    const Kernels& kernels = active();
    (fused(arithmetic) ? kernels.exp_fused : kernels.exp)(x, out, n);
}

double online_softmax_row(double* s, std::size_t n, double& running_max, double& running_sum,
                          Arithmetic arithmetic) {
    const Kernels& kernels = active();
    const auto row = fused(arithmetic) ? kernels.online_softmax_row_fused : kernels.online_softmax_row;
    return row(s, n, running_max, running_sum);
}

namespace {

thread_local Arithmetic arithmetic_of_thread = Arithmetic::portable;
// for_each_row's threads on this thread: 0 for the default (two where the processor has two cores)
thread_local std::size_t threads_of_thread = 0;

}  // namespace

Arithmetic thread_arithmetic() { return arithmetic_of_thread; }

ScopedArithmetic::ScopedArithmetic(Arithmetic arithmetic) : previous_(arithmetic_of_thread) {
    arithmetic_of_thread = arithmetic;
}

ScopedArithmetic::~ScopedArithmetic() { arithmetic_of_thread = previous_; }

ScopedOneThread::ScopedOneThread() : previous_(threads_of_thread) { threads_of_thread = 1; }

ScopedOneThread::~ScopedOneThread() { threads_of_thread = previous_; }

ScopedThreads::ScopedThreads(std::size_t threads) : previous_(threads_of_thread) {
    threads_of_thread = std::max<std::size_t>(1, threads);
}

ScopedThreads::~ScopedThreads() { threads_of_thread = previous_; }

namespace {

// The helper threads of for_each_row, started when first needed and asleep between calls: starting a
// thread for every call cost a tenth of a stacked training step's processor time (issue 43). One caller
// at a time; another thread that calls meanwhile is told so and runs its rows itself.
class RowPool {
public:
    // Runs take() on `helpers` pool threads and on the calling one, and returns when every one has; the
    // first exception any of them threw is thrown again here. false, having run nothing, when another
    // thread is using the pool or no thread could be started.
    bool run(std::size_t helpers, const std::function<void()>& take) {
        const std::unique_lock<std::mutex> mine(in_use_, std::try_to_lock);
        if (!mine.owns_lock()) return false;
        {
            const std::lock_guard<std::mutex> hold(state_);
            try {
                while (threads_.size() < helpers) {
                    const std::size_t id = threads_.size();
                    threads_.emplace_back([this, id] { serve(id); });
                }
            } catch (const std::system_error&) {
                helpers = threads_.size();  // what could be had
                if (helpers == 0) return false;
            }
            job_ = &take, wanted_ = helpers, finished_ = 0, failure_ = nullptr;
            ++generation_;
        }
        wake_.notify_all();
        std::exception_ptr mine_failed;
        try {
            take();
        } catch (...) {
            mine_failed = std::current_exception();
        }
        std::unique_lock<std::mutex> hold(state_);
        done_.wait(hold, [&] { return finished_ == wanted_; });
        job_ = nullptr;
        if (mine_failed) std::rethrow_exception(mine_failed);
        if (failure_) std::rethrow_exception(failure_);
        return true;
    }

private:
    void serve(std::size_t id) {
        std::size_t seen = 0;
        std::unique_lock<std::mutex> hold(state_);
        for (;;) {
            wake_.wait(hold, [&] { return generation_ != seen; });
            seen = generation_;
            if (id >= wanted_) continue;
            const std::function<void()>* job = job_;
            hold.unlock();
            std::exception_ptr failed;
            try {
                (*job)();
            } catch (...) {
                failed = std::current_exception();
            }
            hold.lock();
            if (failed && !failure_) failure_ = failed;
            if (++finished_ == wanted_) done_.notify_one();
        }
    }

    std::mutex in_use_, state_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> threads_;
    const std::function<void()>* job_ = nullptr;
    std::size_t wanted_ = 0, finished_ = 0, generation_ = 0;
    std::exception_ptr failure_;
};

// Never destroyed: its threads sleep until the process ends (joining them at exit could wait on a
// thread that exit() stopped mid-job).
RowPool& row_pool() {
    static RowPool* pool = new RowPool;
    return *pool;
}

}  // namespace

void for_each_row(std::size_t rows, std::size_t cols, const std::function<void(std::size_t)>& row) {
    // Waking a thread costs some microseconds, the time of a few hundred exp() calls.
    constexpr std::size_t entries_worth_a_thread = std::size_t{1} << 15;
    static const std::size_t cores = std::max(1U, std::thread::hardware_concurrency());
    const std::size_t threads =
        std::min(rows, threads_of_thread == 0 ? std::min<std::size_t>(2, cores) : threads_of_thread);
    if (threads < 2 || rows * cols < entries_worth_a_thread) {
        for (std::size_t r = 0; r < rows; ++r) row(r);
        return;
    }
    // Each thread takes the next row not yet taken: rows of unequal cost (under a causal mask row i
    // has i + 1 entries to exponentiate) and a thread that the system pauses on a busy machine
    // leave no thread waiting for the other's share.
    std::atomic<std::size_t> next{0};
    const Arithmetic arithmetic = arithmetic_of_thread;
    const std::function<void()> take_rows = [&] {
        const ScopedArithmetic products(arithmetic);
        const ScopedOneThread one;
        for (std::size_t r = next++; r < rows; r = next++) row(r);
    };
    if (!row_pool().run(threads - 1, take_rows)) take_rows();  // the pool busy: every row on this thread
}

}  // namespace attn::nn
