// Exercise dot-scores: the dot, general and scaled dot scores (Luong et al. 2015, section 3.1;
// Vaswani et al. 2017, eq. 1).
// Checked by lesson 3 (scores), steps [dot], [general] and [scaled]: the scores, the weights
// the softmax makes of them and the contexts must match the golden file.
//
// Task: for queries Q (T_q x d, row t is q_t) and keys K (T_k x d, row s is k_s), write the
// three T_q x T_k score matrices (declared in src/nn/scores.hpp):
//
//   dot:      e_ts = q_t^T k_s                 E = Q K^T
//   general:  e_ts = q_t^T W k_s               E = Q W K^T      (W: d_q x d_k)
//   scaled:   e_ts = q_t^T k_s / sqrt(d)       E = Q K^T / sqrt(d), d = the width of the keys
//
// Available: nn::matmul(A, B, "name") (A B, with a shape check naming it),
// xt::eval(xt::transpose(K)) (K^T as a matrix), std::sqrt.
//
// Then: meson compile -C build attn-student && build/attn-student check dot-scores
#include "nn/scores.hpp"

#include "exercises/not_done.hpp"
#include "nn/linalg.hpp"

#include <xtensor/xmanipulation.hpp>

#include <cmath>

namespace attn::nn {

Mat dot_scores([[maybe_unused]] const Mat& Q, [[maybe_unused]] const Mat& K) { throw ExerciseNotDone("dot-scores"); }

Mat general_scores([[maybe_unused]] const Mat& Q, [[maybe_unused]] const Mat& W, [[maybe_unused]] const Mat& K) {
    throw ExerciseNotDone("dot-scores");
}

Mat scaled_dot_scores([[maybe_unused]] const Mat& Q, [[maybe_unused]] const Mat& K) {
    throw ExerciseNotDone("dot-scores");
}

}  // namespace attn::nn
