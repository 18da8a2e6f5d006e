// The online normaliser step by step, the softmax of a row in one pass for its normaliser, and of
// every row of a matrix (see nn/online_softmax.hpp; Milakov & Gimelshein 2018, algorithm 3).
// The classroom exercise online-softmax; the student's version is lessons/exercises/online_softmax.cpp.
// n = entries of a row, T_q x T_k = rows x columns.
#include "nn/online_softmax.hpp"

#include "core/portable_math.hpp"

#include <algorithm>
#include <limits>

namespace attn::nn {

namespace {

// One row: `in` and `out` hold n entries each (`out` may be `in`).
void online_softmax_span(const double* in, double* out, std::size_t n) {
    const double inf = std::numeric_limits<double>::infinity();
    // pass 1: the running maximum m and the running sum l, rescaled whenever m grows
    double m = -inf, l = 0.0, infinite = 0.0;
    bool nan = false;
    for (std::size_t j = 0; j < n; ++j) {
        const double x = in[j];
        nan |= x != x;
        infinite += x == inf ? 1.0 : 0.0;
        const double m_new = std::max(m, x);
        // -inf so far: nothing to add (and no exp(-inf - (-inf)) = NaN); +inf: shares, below
        if (m_new != -inf && m_new != inf) l = l * portable::exp(m - m_new) + portable::exp(x - m_new);
        m = m_new;
    }
    // pass 2: the weights
    if (nan || m == -inf) {
        std::fill(out, out + n, nan ? std::numeric_limits<double>::quiet_NaN() : 0.0);
        return;
    }
    if (m == inf) {
        for (std::size_t j = 0; j < n; ++j) out[j] = in[j] == inf ? 1.0 / infinite : 0.0;
        return;
    }
    for (std::size_t j = 0; j < n; ++j) out[j] = portable::exp(in[j] - m) / l;
}

}  // namespace

Mat online_normalizer_steps(const Vec& logits) {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    const std::size_t n = logits.size();
    Mat out = xt::empty<double>({n, std::size_t{2}});
    double m = minus_inf, l = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        const double x = logits(j);
        const double m_new = std::max(m, x);
        // while every entry so far is -inf there is nothing to add: l stays 0
        if (m_new != minus_inf) l = l * portable::exp(m - m_new) + portable::exp(x - m_new);
        m = m_new;
        out(j, 0) = m;
        out(j, 1) = l;
    }
    return out;
}

Vec online_softmax(const Vec& logits) {
    Vec out = xt::empty<double>({logits.size()});
    online_softmax_span(logits.data(), out.data(), logits.size());
    return out;
}

Mat online_softmax_rows(const Mat& logits) {
    const std::size_t rows = logits.shape(0), cols = logits.shape(1);
    Mat out = xt::empty<double>({rows, cols});
    for (std::size_t r = 0; r < rows; ++r) online_softmax_span(logits.data() + r * cols, out.data() + r * cols, cols);
    return out;
}

}  // namespace attn::nn
