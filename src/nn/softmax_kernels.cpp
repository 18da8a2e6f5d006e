#include "nn/softmax_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <system_error>
#include <thread>

// Wide-vector copies of the row kernels: x86-64 code may assume only SSE2 (two doubles per
// instruction), so GCC compiles these functions also for AVX2 and AVX-512 and the loader picks the
// copy the processor runs (an ifunc). Every copy does the same IEEE additions, multiplications and
// divisions in the same order (and no fused multiply-add: -ffp-contract=off), so all give the same
// bits. Where GCC cannot make such copies (no ifunc outside ELF systems), one SSE2 copy.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define ATTN_WIDE_VECTOR_COPIES __attribute__((target_clones("avx512f", "avx2", "default")))
#define ATTN_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ATTN_WIDE_VECTOR_COPIES
#define ATTN_ALWAYS_INLINE inline
#endif

namespace attn::nn {

namespace {

// The largest of n values, and whether one of them is NaN (NaN compares false with everything, so
// the maximum alone would pass over it). Four running maxima, because one must wait for the
// previous comparison at every step; their largest is the same number in any order. Inlined, as
// are divide and the exp, into each wide-vector copy of its callers.
ATTN_ALWAYS_INLINE double largest_of(const double* x, std::size_t n, bool& has_nan) {
    const double inf = std::numeric_limits<double>::infinity();
    double m0 = -inf, m1 = -inf, m2 = -inf, m3 = -inf;
    bool nan = false;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        nan |= std::isnan(x[j]) | std::isnan(x[j + 1]) | std::isnan(x[j + 2]) | std::isnan(x[j + 3]);
        m0 = std::max(m0, x[j]);
        m1 = std::max(m1, x[j + 1]);
        m2 = std::max(m2, x[j + 2]);
        m3 = std::max(m3, x[j + 3]);
    }
    for (; j < n; ++j) {
        nan |= std::isnan(x[j]);
        m0 = std::max(m0, x[j]);
    }
    has_nan = nan;
    return std::max(std::max(m0, m1), std::max(m2, m3));
}

// x_j / divisor for j < n; `out` may be `x`. By a power of two (sqrt(d_k) for d_k = 4, 16, 64, ...)
// it multiplies by the reciprocal, which is then exact (unless it overflows), so the product is the
// same double as the quotient and several times cheaper. Otherwise it divides two at a time, both
// read before either is written, which the compiler makes one vector division; each quotient is
// still the correctly rounded x_j / divisor.
ATTN_ALWAYS_INLINE void divide(const double* x, double divisor, double* out, std::size_t n) {
    int exponent = 0;
    const double reciprocal = 1.0 / divisor;
    if (std::frexp(divisor, &exponent) == 0.5 && std::isfinite(reciprocal)) {
        for (std::size_t j = 0; j < n; ++j) out[j] = x[j] * reciprocal;
        return;
    }
    std::size_t j = 0;
    for (; j + 2 <= n; j += 2) {
        const double a = x[j] / divisor, b = x[j + 1] / divisor;
        out[j] = a;
        out[j + 1] = b;
    }
    if (j < n) out[j] = x[j] / divisor;
}

// exp(x), written so that a loop over a row vectorises (glibc's exp is one scalar call per entry):
// no calls, no table, no branches. Within 2 ulp of std::exp (tests/test_nn.cpp measures it).
// 1. x = k ln2 + r with k = round(x / ln2) and |r| <= ln2 / 2: Cody and Waite's reduction, ln2
//    split into a head with 21 trailing zero bits (k ln2_hi is exact for |k| < 2^21, so x - k ln2_hi
//    is exact too) and the rest, fdlibm's pair (Cody & Waite 1980; fdlibm e_exp.c).
// 2. exp(r) by its Taylor polynomial of degree 13 in Horner form: the first term left out,
//    |r|^14 / 14! < 5e-18, is a twentieth of an ulp of exp(r).
// 3. exp(x) = exp(r) 2^k, the power built from its exponent bits. Multiplied in two halves
//    2^k1 2^k2 (k1 = floor(k / 2)), each a normal double, so that the first product is exact and
//    the second rounds once: to a subnormal, to 0, or to +inf, as the true value does.
// x must be in [-746, 710] or NaN (exp_input clamps it there): outside, exp rounds to 0 or
// overflows, and k would not fit the bit tricks. A NaN gives NaN.
inline double exp_of_clamped(double x) {
    constexpr double log2e = 1.4426950408889634;
    constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    // 1.5 * 2^52: adding it rounds to an integer, which then sits in the low bits of the sum
    constexpr double round_shifter = 6755399441055744.0;
    // 1. reduction
    const double shifted = x * log2e + round_shifter;
    const double k = shifted - round_shifter;
    const double r = (x - k * ln2_hi) - k * ln2_lo;
    // 2. exp(r) = 1 + r + r^2/2! + ... + r^13/13!
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    // 3. k from the low bits of `shifted` (an unsigned offset avoids shifting a negative number),
    // then 2^k1 and 2^k2 from exponent fields k1 + 1023 and k2 + 1023
    std::uint64_t shifted_bits = 0, shifter_bits = 0;
    std::memcpy(&shifted_bits, &shifted, sizeof shifted);
    std::memcpy(&shifter_bits, &round_shifter, sizeof round_shifter);
    const std::uint64_t k_plus_2048 = shifted_bits - shifter_bits + 2048;  // in [972, 3072]
    const std::uint64_t k1_plus_1023 = (k_plus_2048 >> 1) - 1;              // floor(k / 2) + 1023
    const std::uint64_t k2_plus_1023 = k_plus_2048 - (k_plus_2048 >> 1) - 1; // k - floor(k / 2) + 1023
    const std::uint64_t bits1 = k1_plus_1023 << 52, bits2 = k2_plus_1023 << 52;
    double two_k1 = 0, two_k2 = 0;
    std::memcpy(&two_k1, &bits1, sizeof two_k1);
    std::memcpy(&two_k2, &bits2, sizeof two_k2);
    return p * two_k1 * two_k2;
}

// x clamped to [-746, 710], where exp_of_clamped gives exp(x) for every x: -inf gives 0 and +inf
// gives +inf. A NaN fails both comparisons and stays NaN. A loop of its own: in the loop of the exp,
// the compiler would give each side of the comparisons its own copy of the exp and not vectorise it.
inline double exp_input(double x) {
    constexpr double lowest = -746.0, highest = 710.0;
    x = x < lowest ? lowest : x;
    return x > highest ? highest : x;
}

}  // namespace

ATTN_WIDE_VECTOR_COPIES void exp_span(const double* x, double* out, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) out[j] = exp_input(x[j]);
    for (std::size_t j = 0; j < n; ++j) out[j] = exp_of_clamped(out[j]);
}

ATTN_WIDE_VECTOR_COPIES void softmax_span(const double* logits, double* out, std::size_t n) {
    const double inf = std::numeric_limits<double>::infinity();
    // 1. the largest logit
    bool has_nan = false;
    const double largest = largest_of(logits, n, has_nan);
    if (has_nan || largest == -inf) {
        const double fill = has_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
        std::fill(out, out + n, fill);
        return;
    }
    if (largest == inf) {
        // exp(inf - inf) would be NaN; the limit gives the +inf entries equal shares.
        const double count = static_cast<double>(std::count(logits, logits + n, inf));
        for (std::size_t j = 0; j < n; ++j) out[j] = logits[j] == inf ? 1.0 / count : 0.0;
        return;
    }
    // 2. exp, shifted by the largest so that exp cannot overflow. exp(-inf) = 0: the -inf (masked)
    // logits at the end of a row, half of every row under a causal mask on average, are not computed.
    std::size_t unmasked = n;
    while (unmasked > 0 && logits[unmasked - 1] == -inf) --unmasked;
    for (std::size_t j = 0; j < unmasked; ++j) out[j] = exp_input(logits[j] - largest);
    for (std::size_t j = 0; j < unmasked; ++j) out[j] = exp_of_clamped(out[j]);
    std::fill(out + unmasked, out + n, 0.0);
    // 3. sum, as eight partial sums (entry j goes to sum j mod 8) then the rest in order: added
    // one by one, each addition would wait for the previous one; eight sums make one or two vector
    // additions per eight entries, and the same numbers whatever the vector width.
    double partial[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    std::size_t j = 0;
    for (; j + 8 <= unmasked; j += 8)
        for (std::size_t lane = 0; lane < 8; ++lane) partial[lane] += out[j + lane];
    double total = ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
                   ((partial[4] + partial[5]) + (partial[6] + partial[7]));
    for (; j < unmasked; ++j) total += out[j];
    // 4. normalise: divided, not multiplied by a rounded 1 / total, which would round twice
    divide(out, total, out, n);
}

void scale_and_mask_span(const double* in, double divisor, const double* mask, double* out, std::size_t n) {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    // e / 1 is e exactly: skipping the division changes no bit
    if (divisor != 1.0)
        divide(in, divisor, out, n);
    else if (out != in)
        std::copy(in, in + n, out);
    if (mask)
        for (std::size_t j = 0; j < n; ++j) out[j] = mask[j] == minus_inf ? minus_inf : out[j] + mask[j];
}

void scale_and_mask_rows(Mat& scores, double divisor, const Mat* mask) {
    const std::size_t cols = scores.shape(1);
    for_each_row(scores.shape(0), cols, [&](std::size_t i) {
        double* row = scores.data() + i * cols;
        scale_and_mask_span(row, divisor, mask ? mask->data() + i * cols : nullptr, row, cols);
    });
}

void for_each_row(std::size_t rows, std::size_t cols, const std::function<void(std::size_t)>& row) {
    // Starting a thread costs tens of microseconds, the time of a few thousand exp() calls.
    constexpr std::size_t entries_worth_a_thread = std::size_t{1} << 15;
    static const bool two_cores = std::thread::hardware_concurrency() >= 2;
    if (!two_cores || rows < 2 || rows * cols < entries_worth_a_thread) {
        for (std::size_t r = 0; r < rows; ++r) row(r);
        return;
    }
    // Each thread takes the next row not yet taken: rows of unequal cost (under a causal mask row i
    // has i + 1 entries to exponentiate) and a thread that the system pauses on a busy machine
    // leave no thread waiting for the other's share.
    std::atomic<std::size_t> next{0};
    const auto take_rows = [&] {
        for (std::size_t r = next++; r < rows; r = next++) row(r);
    };
    std::thread helper;
    try {
        helper = std::thread(take_rows);
    } catch (const std::system_error&) {
        // no thread to be had: this one takes every row
    }
    take_rows();
    if (helper.joinable()) helper.join();
}

}  // namespace attn::nn
