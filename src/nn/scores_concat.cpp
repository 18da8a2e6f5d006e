// The concat score of Luong et al. 2015 (the equation is in nn/scores.hpp). Not an exercise:
// it is the additive score written with one matrix, so it lives apart from the exercise files.
#include "nn/scores.hpp"

#include "core/portable_math.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace attn::nn {

Mat concat_scores(const Mat& Q, const Mat& K, const Mat& W, const Vec& v) {
    const std::size_t d_q = Q.shape(1), d_k = K.shape(1);
    expect_shape("concat score weight W", W, {v.size(), d_q + d_k});
    Mat scores = xt::empty<double>({Q.shape(0), K.shape(0)});
    Vec joined = xt::empty<double>({d_q + d_k});
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j) {
            xt::view(joined, xt::range(0, d_q)) = xt::row(Q, static_cast<std::ptrdiff_t>(i));
            xt::view(joined, xt::range(d_q, d_q + d_k)) = xt::row(K, static_cast<std::ptrdiff_t>(j));
            double e = 0.0;
            for (std::size_t a = 0; a < v.size(); ++a) {
                double pre = 0.0;
                for (std::size_t b = 0; b < d_q + d_k; ++b) pre += W(a, b) * joined(b);
                e += v(a) * portable::tanh(pre);
            }
            scores(i, j) = e;
        }
    return scores;
}

}  // namespace attn::nn
