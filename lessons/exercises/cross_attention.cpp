// Exercise cross-attention: the decoder's queries against the encoder's keys and values
// (Vaswani et al. 2017, section 3.2.3).
// Checked by lesson 12 (transformer), steps [cross-attention] and [gradients]: the decoder blocks
// of the Transformer call it there at initialisation (training calls it too, but amplifies the
// last bit of any other order of the same operations, so it is checked before training).
//
// Task: for Y (T_y x d_model, the decoder's normalised stream: it asks), H (T_x x d_model, the
// encoder's output: it answers), the projections p (declared in src/nn/multi_head.hpp) and h
// heads, return the MultiHeadResult of
//
//   CrossAttention(Y, H) = Concat(head_1, ..., head_h) W^O,
//   head_i = softmax((Y W_i^Q)(H W_i^K)^T / sqrt(d_k)) (H W_i^V)
//
// with weights h x T_y x T_x (not square: T_y and T_x differ). nn::multi_head_attention(X_q, X_kv,
// p, heads, mask) computes exactly this when given the right inputs in the right places. There is
// no mask: the source is known whole, so every target position may read every source word.
//
// Then: meson compile -C build attn-student && build/attn-student check cross-attention
#include "nn/encoder_decoder.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

MultiHeadResult cross_attention([[maybe_unused]] const Mat& Y, [[maybe_unused]] const Mat& H,
                                [[maybe_unused]] const MultiHeadParams& p, [[maybe_unused]] std::size_t heads) {
    throw ExerciseNotDone("cross-attention");
}

}  // namespace attn::nn
