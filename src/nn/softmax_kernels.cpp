#include "nn/softmax_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <system_error>
#include <thread>

namespace attn::nn {

namespace {

// The largest of n values, and whether one of them is NaN (NaN compares false with everything, so
// the maximum alone would pass over it). Four running maxima, because one must wait for the
// previous comparison at every step; their largest is the same number in any order.
double largest_of(const double* x, std::size_t n, bool& has_nan) {
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
void divide(const double* x, double divisor, double* out, std::size_t n) {
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

}  // namespace

void softmax_span(const double* logits, double* out, std::size_t n) {
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
    // 2. exp and sum, shifted by the largest so that exp cannot overflow. A -inf (masked) logit
    // has exp(-inf) = 0 exactly, so it skips the call: half of every row under a causal mask.
    double total = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        out[j] = logits[j] == -inf ? 0.0 : std::exp(logits[j] - largest);
        total += out[j];
    }
    // 3. normalise: divided, not multiplied by a rounded 1 / total, which would round twice
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
