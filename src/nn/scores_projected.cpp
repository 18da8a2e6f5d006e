// The additive score from projections made beforehand (nn/scores.hpp). Not an exercise: the
// exercise additive-score (nn/scores_additive.cpp) projects and scores in one function.
// T_q = queries, T_k = keys, d_a = width of the tanh layer.
#include "nn/scores.hpp"

#include "core/portable_math.hpp"

#include "nn/linalg.hpp"

namespace attn::nn {

Mat additive_scores_projected(const Mat& projected_q, const Mat& projected_k, const Vec& v) {
    const std::size_t T_q = projected_q.shape(0), T_k = projected_k.shape(0), d_a = v.size();
    expect_shape("additive score projected queries", projected_q, {T_q, d_a});
    expect_shape("additive score projected keys", projected_k, {T_k, d_a});
    // the sum over a in order, as additive_scores adds it
    Mat scores = xt::empty<double>({T_q, T_k});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = 0; j < T_k; ++j) {
            double e = 0.0;
            for (std::size_t a = 0; a < d_a; ++a) e += v(a) * portable::tanh(projected_q(i, a) + projected_k(j, a));
            scores(i, j) = e;
        }
    return scores;
}

}  // namespace attn::nn
