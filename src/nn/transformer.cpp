// The Transformer block's post-LN form, the backward of both forms, stacks, inputs and dropout
// (see nn/transformer.hpp; the pre-LN forward is nn/transformer_pre_ln.cpp).
// T = tokens, d_model = model width, h = heads, L = blocks.
#include "nn/transformer.hpp"

#include "nn/backward.hpp"
#include "nn/linalg.hpp"
#include "nn/positional.hpp"

#include <cmath>
#include <stdexcept>

namespace attn::nn {

const char* block_kind_name(BlockKind kind) { return kind == BlockKind::pre_ln ? "pre-LN" : "post-LN"; }

BlockForward post_ln_block(const Mat& X, const BlockParams& p, std::size_t heads, const Mat* mask) {
    BlockForward f;
    // 1. attention on the stream, the residual sum, then its norm
    f.attention = multi_head_attention(X, X, p.attention, heads, mask);
    f.residual_1 = X + f.attention.output;
    f.norm_1 = layer_norm(f.residual_1, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps);
    // 2. the network on the normalised stream, the residual sum, its norm
    f.feed_forward = position_wise_feed_forward(p.feed_forward, f.norm_1.output);
    f.residual_2 = f.norm_1.output + f.feed_forward;
    f.norm_2 = layer_norm(f.residual_2, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps);
    f.output = f.norm_2.output;
    return f;
}

BlockForward transformer_block(BlockKind kind, const Mat& X, const BlockParams& p, std::size_t heads,
                               const Mat* mask) {
    return kind == BlockKind::pre_ln ? pre_ln_block(X, p, heads, mask) : post_ln_block(X, p, heads, mask);
}

namespace {

// y = x + F(x) backwards: dx = dy + (dF/dx)^T dy, the identity's share first.
BlockGrads pre_ln_backward(const BlockParams& p, std::size_t heads, const BlockForward& f,
                           const Mat& dY) {
    BlockGrads g;
    // 2. residual_2 = residual_1 + FFN(LN_2(residual_1))
    const FeedForwardGrads ffn = position_wise_feed_forward_backward(p.feed_forward, f.norm_2.output, dY);
    const LayerNormGrads ln_2 = layer_norm_backward(f.norm_2, p.norm_2.gain, ffn.dH);
    const Mat d_residual_1 = dY + ln_2.dX;
    // 1. residual_1 = X + MHA(LN_1(X))
    const MultiHeadGrads mha =
        multi_head_self_attention_backward(f.norm_1.output, p.attention, heads, f.attention, d_residual_1);
    const LayerNormGrads ln_1 = layer_norm_backward(f.norm_1, p.norm_1.gain, mha.dX);
    g.dX = d_residual_1 + ln_1.dX;
    g.params = {{ln_1.dgain, ln_1.dbias, 0.0}, mha.params, {ln_2.dgain, ln_2.dbias, 0.0}, ffn.params};
    return g;
}

BlockGrads post_ln_backward(const Mat& X, const BlockParams& p, std::size_t heads, const BlockForward& f,
                            const Mat& dY) {
    BlockGrads g;
    // 2. output = LN_2(H + FFN(H)), H = LN_1(residual_1)
    const LayerNormGrads ln_2 = layer_norm_backward(f.norm_2, p.norm_2.gain, dY);
    const FeedForwardGrads ffn = position_wise_feed_forward_backward(p.feed_forward, f.norm_1.output, ln_2.dX);
    const Mat dH = ln_2.dX + ffn.dH;
    // 1. H = LN_1(X + MHA(X))
    const LayerNormGrads ln_1 = layer_norm_backward(f.norm_1, p.norm_1.gain, dH);
    const MultiHeadGrads mha = multi_head_self_attention_backward(X, p.attention, heads, f.attention, ln_1.dX);
    g.dX = ln_1.dX + mha.dX;
    g.params = {{ln_1.dgain, ln_1.dbias, 0.0}, mha.params, {ln_2.dgain, ln_2.dbias, 0.0}, ffn.params};
    return g;
}

}  // namespace

BlockGrads transformer_block_backward(BlockKind kind, const Mat& X, const BlockParams& p, std::size_t heads,
                                      [[maybe_unused]] const Mat* mask, const BlockForward& forward, const Mat& dY) {
    // the mask is a constant: its effect is in the kept attention weights
    return kind == BlockKind::pre_ln ? pre_ln_backward(p, heads, forward, dY)
                                     : post_ln_backward(X, p, heads, forward, dY);
}

std::vector<NamedEntries> block_tensors(BlockParams& p) {
    return {named_entries("g_1", p.norm_1.gain),          named_entries("b_1", p.norm_1.bias),
            named_entries("W_Q", p.attention.W_Q),        named_entries("W_K", p.attention.W_K),
            named_entries("W_V", p.attention.W_V),        named_entries("W_O", p.attention.W_O),
            named_entries("g_2", p.norm_2.gain),          named_entries("b_2", p.norm_2.bias),
            named_entries("W_1", p.feed_forward.W_1),     named_entries("b_ff1", p.feed_forward.b_1),
            named_entries("W_2", p.feed_forward.W_2),     named_entries("b_ff2", p.feed_forward.b_2)};
}

StackForward transformer_stack(BlockKind kind, const Mat& X, const std::vector<BlockParams>& blocks,
                               const LayerNormParams& final_norm, std::size_t heads, const Mat* mask) {
    StackForward s;
    Mat stream = X;
    for (const auto& p : blocks) {
        s.blocks.push_back(transformer_block(kind, stream, p, heads, mask));
        stream = s.blocks.back().output;
    }
    if (kind == BlockKind::pre_ln) {
        s.final_norm = layer_norm(stream, final_norm.gain, final_norm.bias, final_norm.eps);
        stream = s.final_norm.output;
    }
    s.output = stream;
    return s;
}

StackGrads transformer_stack_backward(BlockKind kind, const Mat& X, const std::vector<BlockParams>& blocks,
                                      const LayerNormParams& final_norm, std::size_t heads, const Mat* mask,
                                      const StackForward& forward, const Mat& dY) {
    StackGrads g;
    g.blocks.resize(blocks.size());
    Mat d_stream = dY;
    if (kind == BlockKind::pre_ln) {
        LayerNormGrads last = layer_norm_backward(forward.final_norm, final_norm.gain, dY);
        d_stream = std::move(last.dX);
        g.final_norm = {std::move(last.dgain), std::move(last.dbias), 0.0};
    }
    for (std::size_t l = blocks.size(); l-- > 0;) {
        const Mat& input = l == 0 ? X : forward.blocks[l - 1].output;
        BlockGrads b = transformer_block_backward(kind, input, blocks[l], heads, mask, forward.blocks[l], d_stream);
        d_stream = std::move(b.dX);
        g.blocks[l] = std::move(b.params);
    }
    g.dX = d_stream;
    return g;
}

Mat scaled_embeddings(const Mat& table, const std::vector<std::size_t>& ids) {
    return gather_rows(table, ids) * std::sqrt(static_cast<double>(table.shape(1)));
}

Mat transformer_inputs(const Mat& table, const std::vector<std::size_t>& ids) {
    return scaled_embeddings(table, ids) + sinusoidal_encoding(ids.size(), table.shape(1));
}

Mat inverted_dropout(const Mat& X, const Mat& keep, double p) {
    expect_shape("dropout keep mask", keep, shape_of(X));
    if (!(p >= 0.0 && p < 1.0)) throw std::invalid_argument("dropout: p must lie in [0, 1)");
    const double scale = 1.0 / (1.0 - p);
    Mat out = xt::empty<double>({X.shape(0), X.shape(1)});
    for (std::size_t k = 0; k < X.size(); ++k) out.data()[k] = keep.data()[k] != 0.0 ? X.data()[k] * scale : 0.0;
    return out;
}

}  // namespace attn::nn
