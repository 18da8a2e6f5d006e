// The concat score of Luong et al. 2015 (the equation is in nn/scores.hpp). Not an exercise: it
// is the additive score written with one matrix, W [q; k] = W_q q + W_k k for W = [W_q W_k], so
// it splits W and calls the exercise additive-score's function (a student's, in attn-student).
#include "nn/scores.hpp"

#include <xtensor/xview.hpp>

namespace attn::nn {

Mat concat_scores(const Mat& Q, const Mat& K, const Mat& W, const Vec& v) {
    const std::size_t d_q = Q.shape(1), d_k = K.shape(1);
    expect_shape("concat score weight W", W, {v.size(), d_q + d_k});
    const Mat W_q = xt::view(W, xt::all(), xt::range(0, d_q));
    const Mat W_k = xt::view(W, xt::all(), xt::range(d_q, d_q + d_k));
    return additive_scores(Q, K, W_q, W_k, v);
}

}  // namespace attn::nn
