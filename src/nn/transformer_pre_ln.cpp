// The pre-LN Transformer block (see nn/transformer.hpp), wired from the library's parts.
// The classroom exercise pre-ln-block; the student's version is lessons/exercises/pre_ln_block.cpp.
// T = tokens, d_model = model width, h = heads.
#include "nn/transformer.hpp"

namespace attn::nn {

BlockForward pre_ln_block(const Mat& X, const BlockParams& p, std::size_t heads, const Mat* mask) {
    BlockForward f;
    // 1. attention reads the normalised stream; its output is added to the stream itself
    f.norm_1 = layer_norm(X, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps);
    f.attention = multi_head_attention(f.norm_1.output, f.norm_1.output, p.attention, heads, mask);
    f.residual_1 = X + f.attention.output;
    // 2. the same for the feed-forward network; nothing normalises the stream itself
    f.norm_2 = layer_norm(f.residual_1, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps);
    f.feed_forward = position_wise_feed_forward(p.feed_forward, f.norm_2.output);
    f.residual_2 = f.residual_1 + f.feed_forward;
    f.output = f.residual_2;
    return f;
}

}  // namespace attn::nn
