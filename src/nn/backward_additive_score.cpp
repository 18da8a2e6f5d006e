// The backward of the additive score of Bahdanau et al. 2015 (see nn/backward.hpp; the forward is
// nn/scores_additive.cpp). An exercise-sized function; a student's version would replace this file.
// T_q = queries, T_k = keys, d_q / d_k = their widths, d_a = width of the tanh layer.
#include "nn/backward.hpp"

#include "core/portable_math.hpp"

#include "nn/linalg.hpp"

namespace attn::nn {

ProjectedScoreGrads additive_scores_projected_backward(const Mat& projected_q, const Mat& projected_k, const Vec& v,
                                                       const Mat& dE) {
    const std::size_t T_q = projected_q.shape(0), T_k = projected_k.shape(0), d_a = v.size();
    expect_shape("additive score backward projected queries", projected_q, {T_q, d_a});
    expect_shape("additive score backward projected keys", projected_k, {T_k, d_a});
    expect_shape("additive score backward dL/d(scores) dE", dE, {T_q, T_k});
    // each pair (i, j) sends du_ij to query i's projection and to key j's: both enter u_ij with weight 1
    ProjectedScoreGrads g;
    g.dv = xt::zeros<double>({d_a});
    g.d_projected_q = xt::zeros<double>({T_q, d_a});
    g.d_projected_k = xt::zeros<double>({T_k, d_a});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = 0; j < T_k; ++j)
            for (std::size_t a = 0; a < d_a; ++a) {
                const double t = portable::tanh(projected_q(i, a) + projected_k(j, a));
                g.dv(a) += dE(i, j) * t;
                const double du = dE(i, j) * v(a) * (1.0 - t * t);  // tanh' = 1 - tanh^2
                g.d_projected_q(i, a) += du;
                g.d_projected_k(j, a) += du;
            }
    return g;
}

AdditiveScoreGrads additive_scores_backward(const Mat& Q, const Mat& K, const Mat& W_q, const Mat& W_k,
                                            const Vec& v, const Mat& dE) {
    const std::size_t d_a = v.size();
    expect_shape("additive score backward weight W_q", W_q, {d_a, Q.shape(1)});
    expect_shape("additive score backward weight W_k", W_k, {d_a, K.shape(1)});
    // 1. the projections again, exactly as the forward computed them (the same tanh inputs)
    const Mat projected_q = matmul_transposed(Q, W_q, "Q W_q^T");
    const Mat projected_k = matmul_transposed(K, W_k, "K W_k^T");
    // 2. through the tanh and v
    ProjectedScoreGrads p = additive_scores_projected_backward(projected_q, projected_k, v, dE);
    // 3. through the projections P_q = Q W_q^T and P_k = K W_k^T
    AdditiveScoreGrads g;
    g.dv = std::move(p.dv);
    g.dQ = matmul(p.d_projected_q, W_q, "dP_q W_q");
    g.dK = matmul(p.d_projected_k, W_k, "dP_k W_k");
    g.dW_q = matmul(transposed(p.d_projected_q), Q, "dP_q^T Q");
    g.dW_k = matmul(transposed(p.d_projected_k), K, "dP_k^T K");
    return g;
}

}  // namespace attn::nn
