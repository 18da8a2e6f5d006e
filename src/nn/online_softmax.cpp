// The running normaliser of the online softmax, shown step by step (see nn/online_softmax.hpp).
// The softmax itself, the classroom exercise online-softmax, is in online_softmax_rows.cpp.
// n = entries of a row.
#include "nn/online_softmax.hpp"

#include "core/portable_math.hpp"

#include <algorithm>
#include <limits>

namespace attn::nn {

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

}  // namespace attn::nn
