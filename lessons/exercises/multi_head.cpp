// Exercise multi-head: multi-head attention (Vaswani et al. 2017, section 3.2.2).
// Checked by lesson 6 (multi-head), steps [concat], [one-head] and [causal]: its output must
// equal the per-head loop, and with h = 1 plain attention, and its causal weights and outputs
// must match the golden file.
//
// Task: for X_q (T_q x d_model), X_kv (T_k x d_model), the d_model x d_model matrices of p and
// h heads of width d_k = d_model / h, fill a MultiHeadResult (declared in src/nn/multi_head.hpp):
//
//   head_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i,   Q_i = X_q W_i^Q,  K_i = X_kv W_i^K,  V_i = X_kv W_i^V
//   concat = Concat(head_1, ..., head_h)  (T_q x d_model, head i in columns [i d_k, (i+1) d_k))
//   output = concat W^O
//   weights(i, ., .) = head i's softmax weights (T_q x T_k), left empty when keep is HeadWeights::drop
//
// where W_i^Q is columns [i d_k, (i+1) d_k) of p.W_Q (likewise W^K, W^V). `mask` (T_q x T_k of
// 0 and -inf) is added to every head's scores before the softmax, or is nullptr.
// Available: nn::head_width, nn::split_heads / nn::merge_heads (your exercise heads),
// nn::matmul, nn::transposed, nn::softmax_rows, xt::view(H, i, xt::all(), xt::all()).
//
// Then: meson compile -C build attn-student && build/attn-student check multi-head
#include "nn/multi_head.hpp"

#include "exercises/not_done.hpp"
#include "nn/linalg.hpp"
#include "nn/softmax.hpp"

#include <xtensor/xview.hpp>

#include <cmath>

namespace attn::nn {

MultiHeadResult multi_head_attention([[maybe_unused]] const Mat& X_q, [[maybe_unused]] const Mat& X_kv,
                                     [[maybe_unused]] const MultiHeadParams& p, [[maybe_unused]] std::size_t heads,
                                     [[maybe_unused]] const Mat* mask, [[maybe_unused]] HeadWeights keep) {
    throw ExerciseNotDone("multi-head");
}

}  // namespace attn::nn
