#include "nn/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn::nn {

namespace {

// Softmax of n contiguous values from `in` into `out`.
void softmax_span(const double* in, double* out, std::size_t n) {
    double largest = -std::numeric_limits<double>::infinity();
    bool has_nan = false;
    for (std::size_t i = 0; i < n; ++i) {
        has_nan = has_nan || std::isnan(in[i]);
        largest = std::max(largest, in[i]);
    }
    const double inf = std::numeric_limits<double>::infinity();
    if (has_nan || largest == -inf) {
        const double fill = has_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
        for (std::size_t i = 0; i < n; ++i) out[i] = fill;
        return;
    }
    if (largest == inf) {
        // exp(inf - inf) would be NaN; the limit gives the +inf entries equal shares.
        const double count = static_cast<double>(std::count(in, in + n, inf));
        for (std::size_t i = 0; i < n; ++i) out[i] = in[i] == inf ? 1.0 / count : 0.0;
        return;
    }
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = std::exp(in[i] - largest);
        total += out[i];
    }
    for (std::size_t i = 0; i < n; ++i) out[i] /= total;
}

}  // namespace

Vec softmax(const Vec& logits) {
    Vec out = xt::empty<double>({logits.size()});
    softmax_span(logits.data(), out.data(), logits.size());
    return out;
}

Mat softmax_rows(const Mat& logits) {
    const std::size_t rows = logits.shape(0), cols = logits.shape(1);
    Mat out = xt::empty<double>({rows, cols});
    for (std::size_t r = 0; r < rows; ++r) softmax_span(logits.data() + r * cols, out.data() + r * cols, cols);
    return out;
}

}  // namespace attn::nn
