// Exercise additive-score: the additive (Bahdanau) score of every query against every key
// (Bahdanau et al. 2015, appendix A.1.2; eq. 6 turns the scores into weights).
// Checked by lesson 2 (additive), step [scores]: the matrix E of all decoder steps' scores
// must match the golden file.
//
// Task: for queries Q (T_q x d_q, row i is q_i), keys K (T_k x d_k, row j is k_j), weights
// W_q (d_a x d_q), W_k (d_a x d_k) and v (d_a), return the T_q x T_k matrix
//
//   e_ij = v^T tanh(W_q q_i + W_k k_j)
//
// Write both functions (declared in src/nn/scores.hpp). W_q q_i does not depend on j, nor W_k k_j
// on i: additive_scores projects every query and every key once (P_q = Q W_q^T, T_q x d_a, and
// P_k = K W_k^T, T_k x d_a), then additive_scores_projected(P_q, P_k, v) combines each pair:
// e_ij = sum_a v_a tanh(P_q(i, a) + P_k(j, a)). Lessons 2 and 9 also call
// additive_scores_projected on their own (lesson 9's training projects a sentence's keys once),
// and Luong's concat score (lesson 3) is your additive_scores with W split in two.
// Throw ShapeError (core/tensor.hpp) when P_q or P_k is not d_a wide: expect_shape("name", P_q,
// {T_q, d_a}).
// Available: nn::matmul(A, B, "name") (A B, with a shape check naming it), xt::transpose,
// portable::tanh (core/portable_math.hpp: attn's own, the reference's; std::tanh passes too,
// within the tolerance), element access M(i, j) and v(a).
//
// Then: meson compile -C build attn-student && build/attn-student check additive-score
#include "nn/scores.hpp"

#include "exercises/not_done.hpp"
#include "core/portable_math.hpp"
#include "nn/linalg.hpp"

#include <xtensor/xmanipulation.hpp>

#include <cmath>

namespace attn::nn {

Mat additive_scores_projected([[maybe_unused]] const Mat& projected_q, [[maybe_unused]] const Mat& projected_k,
                              [[maybe_unused]] const Vec& v) {
    throw ExerciseNotDone("additive-score");
}

Mat additive_scores([[maybe_unused]] const Mat& Q, [[maybe_unused]] const Mat& K, [[maybe_unused]] const Mat& W_q,
                    [[maybe_unused]] const Mat& W_k, [[maybe_unused]] const Vec& v) {
    throw ExerciseNotDone("additive-score");
}

}  // namespace attn::nn
