// Exercise scaled-attention: scaled dot-product attention in matrix form, without and with a mask
// (Vaswani et al. 2017, eq. 1 and section 3.2.3).
// Checked by lesson 4 (self-attention), steps [attention] (no mask) and [causal] (with the causal
// mask): the scores S, the weights A and the outputs O must match the golden file.
//
// Task: for queries Q (T_q x d_k), keys K (T_k x d_k) and values V (T_k x d_v), fill an
// AttentionResult (declared in src/nn/self_attention.hpp) with
//
//   scores  S = Q K^T / sqrt(d_k)         (T_q x T_k; with a mask: S + M)
//   weights A = softmax of each row of S  (T_q x T_k)
//   output  O = A V                       (T_q x d_v)
//
// The second overload takes a mask M (T_q x T_k of 0 and -inf) that goes into the scores before
// the softmax, S + M; its `scores` are the masked ones (xtensor adds two matrices entry by entry). K and V must have the same number of rows:
// throw ShapeError (core/tensor.hpp) when they do not.
// Available: nn::scaled_dot_scores(Q, K) (your exercise dot-scores), nn::softmax_rows (your
// exercise softmax), nn::matmul(A, B, "name"), expect_shape("name", M, shape_of(S)).
//
// Then: meson compile -C build attn-student && build/attn-student check scaled-attention
#include "nn/self_attention.hpp"

#include "exercises/not_done.hpp"
#include "nn/linalg.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"

namespace attn::nn {

AttentionResult scaled_dot_product_attention([[maybe_unused]] const Mat& Q, [[maybe_unused]] const Mat& K,
                                             [[maybe_unused]] const Mat& V) {
    throw ExerciseNotDone("scaled-attention");
}

AttentionResult scaled_dot_product_attention([[maybe_unused]] const Mat& Q, [[maybe_unused]] const Mat& K,
                                             [[maybe_unused]] const Mat& V, [[maybe_unused]] const Mat& mask) {
    throw ExerciseNotDone("scaled-attention");
}

}  // namespace attn::nn
