// Cross-attention (see nn/encoder_decoder.hpp): the decoder's queries against the encoder's keys
// and values. The classroom exercise cross-attention; the student's version is
// lessons/exercises/cross_attention.cpp.
// T_y = decoder tokens (queries), T_x = encoder tokens (keys/values), d_model = model width, h = heads.
#include "nn/encoder_decoder.hpp"

namespace attn::nn {

MultiHeadResult cross_attention(const Mat& Y, const Mat& H, const MultiHeadParams& p, std::size_t heads) {
    // queries from the decoder (Y), keys and values from the encoder (H); no mask: the whole source
    // is known, so target position i may read every source position j
    return multi_head_attention(Y, H, p, heads, nullptr);
}

}  // namespace attn::nn
