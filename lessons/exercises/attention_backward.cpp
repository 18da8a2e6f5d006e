// Exercise attention-backward: the gradients of scaled dot-product attention.
// Checked by lesson 8 (backprop), step [attention-backward]: dQ, dK and dV (d_k = 4, d_v = 3)
// must match the golden file.
//
// Task: for the forward pass (Vaswani et al. 2017, eq. 1; `forward` is what
// nn::scaled_dot_product_attention returned, its weights P included)
//
//   S = Q K^T / sqrt(d_k) + M,   P = softmax_rows(S),   O = P V
//
// and dO = dL/dO (T_q x d_v), return (declared in src/nn/backward.hpp)
//
//   dV = P^T dO,   dP = dO V^T,   dS = softmax_rows_backward(P, dP),
//   dQ = dS K / sqrt(d_k),   dK = dS^T Q / sqrt(d_k)
//
// in an AttentionGrads (all five fields). Available: nn::matmul(A, B, "name"),
// nn::transposed(M), nn::softmax_rows_backward (exercise softmax-backward), std::sqrt.
//
// Then: meson compile -C build attn-student && build/attn-student check attention-backward
#include "nn/backward.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

AttentionGrads scaled_dot_product_attention_backward([[maybe_unused]] const Mat& Q, [[maybe_unused]] const Mat& K,
                                                     [[maybe_unused]] const Mat& V,
                                                     [[maybe_unused]] const AttentionResult& forward,
                                                     [[maybe_unused]] const Mat& dO) {
    throw ExerciseNotDone("attention-backward");
}

}  // namespace attn::nn
