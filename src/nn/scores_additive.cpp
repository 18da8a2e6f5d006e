// The additive score of Bahdanau et al. 2015 (the equation is in nn/scores.hpp).
// The classroom exercise additive-score; the student's version is lessons/exercises/additive_score.cpp.
// Both functions are the exercise: lesson 9's training calls the second with its keys projected once.
// T_q = queries, T_k = keys, d_a = width of the tanh layer.
#include "nn/scores.hpp"

#include "core/portable_math.hpp"

#include "nn/linalg.hpp"

#include <xtensor/xmanipulation.hpp>

#include <cmath>

namespace attn::nn {

Mat additive_scores_projected(const Mat& projected_q, const Mat& projected_k, const Vec& v) {
    const std::size_t T_q = projected_q.shape(0), T_k = projected_k.shape(0), d_a = v.size();
    expect_shape("additive score projected queries", projected_q, {T_q, d_a});
    expect_shape("additive score projected keys", projected_k, {T_k, d_a});
    // each pair: v . tanh(W_q q_i + W_k k_j), the sum over a in order
    Mat scores = xt::empty<double>({T_q, T_k});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = 0; j < T_k; ++j) {
            double e = 0.0;
            for (std::size_t a = 0; a < d_a; ++a) e += v(a) * portable::tanh(projected_q(i, a) + projected_k(j, a));
            scores(i, j) = e;
        }
    return scores;
}

Mat additive_scores(const Mat& Q, const Mat& K, const Mat& W_q, const Mat& W_k, const Vec& v) {
    const std::size_t d_a = v.size();
    expect_shape("additive score weight W_q", W_q, {d_a, Q.shape(1)});
    expect_shape("additive score weight W_k", W_k, {d_a, K.shape(1)});
    // project every query and every key once, then score each pair
    return additive_scores_projected(matmul(Q, transposed(W_q), "Q W_q^T"), matmul(K, transposed(W_k), "K W_k^T"), v);
}

}  // namespace attn::nn
