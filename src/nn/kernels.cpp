#include "nn/kernels.hpp"

#include "core/portable_math.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <thread>

// The three copies of each kernel: the bodies below are inlined into a baseline function and into
// functions compiled for AVX2 and for AVX-512 (GCC's and Clang's `target` attribute; `flatten`
// inlines every call, portable::exp included, so that the loops vectorise at each width). Where
// there are no such attributes (not x86-64, another compiler), the baseline alone.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTN_WIDE_COPIES 1
#define ATTN_BASELINE_COPY __attribute__((flatten))
#define ATTN_AVX2_COPY __attribute__((target("avx2"), flatten))
#define ATTN_AVX512_COPY __attribute__((target("avx512f"), flatten))
#define ATTN_ALWAYS_INLINE inline __attribute__((always_inline))
#define ATTN_RESTRICT __restrict
#else
#define ATTN_WIDE_COPIES 0
#define ATTN_BASELINE_COPY
#define ATTN_ALWAYS_INLINE inline
#define ATTN_RESTRICT
#endif

namespace attn::nn {

namespace {

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

ATTN_ALWAYS_INLINE void exp_body(const double* x, double* out, std::size_t n) {
    // clamped first, in a loop of its own: with the comparisons in the loop of the exp, the
    // compiler would give each side its own copy of the exp and not vectorise it
    for (std::size_t j = 0; j < n; ++j) out[j] = portable::exp_input(x[j]);
    for (std::size_t j = 0; j < n; ++j) out[j] = portable::exp_of_clamped(out[j]);
}

ATTN_ALWAYS_INLINE void softmax_body(const double* logits, double* out, std::size_t n) {
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
    for (std::size_t j = 0; j < unmasked; ++j) out[j] = portable::exp_input(logits[j] - largest);
    for (std::size_t j = 0; j < unmasked; ++j) out[j] = portable::exp_of_clamped(out[j]);
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

ATTN_ALWAYS_INLINE void scale_and_mask_body(const double* in, double divisor, const double* mask, double* out,
                                            std::size_t n) {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    // e / 1 is e exactly: skipping the division changes no bit
    if (divisor != 1.0)
        divide(in, divisor, out, n);
    else if (out != in)
        std::copy(in, in + n, out);
    if (mask)
        for (std::size_t j = 0; j < n; ++j) out[j] = mask[j] == minus_inf ? minus_inf : out[j] + mask[j];
}

// Row i of C = A B: c_j = 0, then c_j += a_p B_pj for p = 0 .. k-1, for a block of columns at a
// time so that the block of c stays in the first-level cache while the rows of B stream past.
// Four rows of A at once where there are four: each row of B is read once for the four, and every
// c_ij still receives its products in the order of p.
ATTN_ALWAYS_INLINE void matmul_rows_body(const double* ATTN_RESTRICT A, const double* ATTN_RESTRICT B,
                                         double* ATTN_RESTRICT C, std::size_t rows, std::size_t k, std::size_t n) {
    constexpr std::size_t block = 256;
    for (std::size_t j0 = 0; j0 < n; j0 += block) {
        const std::size_t width = std::min(block, n - j0);
        std::size_t i = 0;
        for (; i + 4 <= rows; i += 4) {
            double* ATTN_RESTRICT c0 = C + i * n + j0;
            double* ATTN_RESTRICT c1 = c0 + n;
            double* ATTN_RESTRICT c2 = c1 + n;
            double* ATTN_RESTRICT c3 = c2 + n;
            for (std::size_t j = 0; j < width; ++j) c0[j] = c1[j] = c2[j] = c3[j] = 0.0;
            for (std::size_t p = 0; p < k; ++p) {
                const double a0 = A[i * k + p], a1 = A[(i + 1) * k + p], a2 = A[(i + 2) * k + p],
                             a3 = A[(i + 3) * k + p];
                const double* ATTN_RESTRICT b = B + p * n + j0;
                for (std::size_t j = 0; j < width; ++j) {
                    c0[j] += a0 * b[j];
                    c1[j] += a1 * b[j];
                    c2[j] += a2 * b[j];
                    c3[j] += a3 * b[j];
                }
            }
        }
        for (; i < rows; ++i) {
            double* ATTN_RESTRICT c = C + i * n + j0;
            for (std::size_t j = 0; j < width; ++j) c[j] = 0.0;
            for (std::size_t p = 0; p < k; ++p) {
                const double a = A[i * k + p];
                const double* ATTN_RESTRICT b = B + p * n + j0;
                for (std::size_t j = 0; j < width; ++j) c[j] += a * b[j];
            }
        }
    }
}

// One copy of every kernel, for one vector width.
struct Kernels {
    void (*exp)(const double*, double*, std::size_t);
    void (*softmax)(const double*, double*, std::size_t);
    void (*scale_and_mask)(const double*, double, const double*, double*, std::size_t);
    void (*matmul_rows)(const double*, const double*, double*, std::size_t, std::size_t, std::size_t);
};

#define ATTN_KERNEL_COPY(suffix, attributes)                                                                  \
    attributes void exp_##suffix(const double* x, double* out, std::size_t n) { exp_body(x, out, n); }        \
    attributes void softmax_##suffix(const double* x, double* out, std::size_t n) { softmax_body(x, out, n); } \
    attributes void scale_and_mask_##suffix(const double* in, double divisor, const double* mask, double* out, \
                                            std::size_t n) {                                                  \
        scale_and_mask_body(in, divisor, mask, out, n);                                                       \
    }                                                                                                         \
    attributes void matmul_rows_##suffix(const double* A, const double* B, double* C, std::size_t rows,      \
                                         std::size_t k, std::size_t n) {                                      \
        matmul_rows_body(A, B, C, rows, k, n);                                                                \
    }                                                                                                         \
    constexpr Kernels kernels_##suffix{exp_##suffix, softmax_##suffix, scale_and_mask_##suffix, matmul_rows_##suffix};

ATTN_KERNEL_COPY(baseline, ATTN_BASELINE_COPY)
#if ATTN_WIDE_COPIES
ATTN_KERNEL_COPY(avx2, ATTN_AVX2_COPY)
ATTN_KERNEL_COPY(avx512, ATTN_AVX512_COPY)
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

void exp_span(const double* x, double* out, std::size_t n) { active().exp(x, out, n); }

void softmax_span(const double* logits, double* out, std::size_t n) { active().softmax(logits, out, n); }

void scale_and_mask_span(const double* in, double divisor, const double* mask, double* out, std::size_t n) {
    active().scale_and_mask(in, divisor, mask, out, n);
}

void scale_and_mask_rows(Mat& scores, double divisor, const Mat* mask) {
    const std::size_t cols = scores.shape(1);
    for_each_row(scores.shape(0), cols, [&](std::size_t i) {
        double* row = scores.data() + i * cols;
        scale_and_mask_span(row, divisor, mask ? mask->data() + i * cols : nullptr, row, cols);
    });
}

void matmul_span(const double* A, const double* B, double* C, std::size_t m, std::size_t k, std::size_t n) {
    // blocks of 16 rows go to the threads: each block reads every row of B once for its 16 rows
    constexpr std::size_t rows_per_block = 16;
    const std::size_t blocks = (m + rows_per_block - 1) / rows_per_block;
    const Kernels& kernels = active();
    // a block's work in multiply-adds, counted as for_each_row counts entries (a thread repays
    // itself from about 2^15 entries of a softmax, about 2^18 multiply-adds)
    const std::size_t work = std::max<std::size_t>(1, rows_per_block * k * n / 8);
    for_each_row(blocks, work, [&](std::size_t b) {
        const std::size_t first = b * rows_per_block, rows = std::min(rows_per_block, m - first);
        kernels.matmul_rows(A + first * k, B, C + first * n, rows, k, n);
    });
}

void matmul_span_serial(const double* A, const double* B, double* C, std::size_t m, std::size_t k, std::size_t n) {
    active().matmul_rows(A, B, C, m, k, n);
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
