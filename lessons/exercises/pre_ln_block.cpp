// Exercise pre-ln-block: one pre-LN Transformer block (Xiong et al. 2020, figure 1 (b)), wired
// from the library's layer norm, multi-head attention and position-wise network.
// Checked by lesson 11 (transformer-block), step [block]: every pre.* tensor must match the golden
// file, and with W^O = 0, W_2 = 0, b_2 = 0 the block must be exactly the identity.
//
// Task: for X (T x d_model), the parameters p (declared in src/nn/transformer.hpp), h heads and a
// mask (T x T of 0 and -inf, or nullptr), fill a BlockForward:
//
//   norm_1       = layer_norm(X, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps)
//   attention    = multi_head_attention(N_1, N_1, p.attention, heads, mask),  N_1 = norm_1.output
//   residual_1   = X + attention.output                          (H: the stream itself, not its norm)
//   norm_2       = layer_norm(residual_1, p.norm_2...)
//   feed_forward = position_wise_feed_forward(p.feed_forward, norm_2.output)
//   residual_2   = residual_1 + feed_forward
//   output       = residual_2                                     (nothing normalises the stream)
//
// The norm sits inside each branch; the residual sum adds the branch to the unnormalised stream.
// (Post-LN, Vaswani et al. 2017, normalises after the sum: LN(x + Sublayer(x)); that is not this.)
//
// Then: meson compile -C build attn-student && build/attn-student check pre-ln-block
#include "nn/transformer.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

BlockForward pre_ln_block([[maybe_unused]] const Mat& X, [[maybe_unused]] const BlockParams& p,
                          [[maybe_unused]] std::size_t heads, [[maybe_unused]] const Mat* mask) {
    throw ExerciseNotDone("pre-ln-block");
}

}  // namespace attn::nn
