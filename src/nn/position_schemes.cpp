// Where a Transformer's positions enter: RoPE and ALiBi inside self-attention, and the stacks that use
// them (see nn/position_schemes.hpp).
// T = tokens, d_model = model width, h = heads, d_k = d_model / h.
#include "nn/position_schemes.hpp"

#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/rotary.hpp"
#include "nn/scores.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace attn::nn {

const char* position_scheme_name(PositionScheme scheme) {
    switch (scheme) {
        case PositionScheme::added: return "added";
        case PositionScheme::rope: return "rope";
        case PositionScheme::alibi: return "alibi";
        case PositionScheme::none: return "none";
    }
    return "?";
}

bool adds_positions(PositionScheme scheme, bool decoder) {
    return scheme == PositionScheme::added || (scheme == PositionScheme::none && !decoder);
}

Mat symmetric_alibi_bias(std::size_t T, double slope) {
    Mat B = xt::empty<double>({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j)
            B(i, j) = -slope * std::abs(static_cast<double>(j) - static_cast<double>(i));
    return B;
}

Mat rotary_rotation_transposed(const Mat& G) {
    // R(-a) (x, y) = (x c + y s, -x s + y c): flip the sign of every pair's second entry, turn by +a,
    // flip it again; the same frequencies and angles as the forward's
    Mat flipped = G;
    for (std::size_t t = 0; t < G.shape(0); ++t)
        for (std::size_t j = 1; j < G.shape(1); j += 2) flipped(t, j) = -flipped(t, j);
    Mat out = rotary_rotation(flipped, std::size_t{0});
    for (std::size_t t = 0; t < G.shape(0); ++t)
        for (std::size_t j = 1; j < G.shape(1); j += 2) out(t, j) = -out(t, j);
    return out;
}

namespace {

bool in_scores(PositionScheme scheme) { return scheme == PositionScheme::rope || scheme == PositionScheme::alibi; }

void expect_rope_width(PositionScheme scheme, std::size_t d_k) {
    if (scheme == PositionScheme::rope && d_k % 2 != 0)
        throw ShapeError("RoPE turns each head's coordinates in pairs: the head width d_k = d_model / h must be even, "
                         "got " + std::to_string(d_k));
}

// What head i adds to its scores: ALiBi's bias (causal or both ways), else the causal mask or nothing.
Mat head_bias(PositionScheme scheme, bool causal, std::size_t T, double slope) {
    if (scheme == PositionScheme::alibi) return causal ? causal_alibi_bias(T, slope) : symmetric_alibi_bias(T, slope);
    return causal ? causal_mask(T) : zeros(T, T);
}

}  // namespace

MultiHeadResult positioned_self_attention(const Mat& X, const MultiHeadParams& p, std::size_t heads,
                                          PositionScheme scheme, bool causal) {
    const std::size_t T = X.shape(0), d_model = X.shape(1), d_k = head_width(d_model, heads);
    if (!in_scores(scheme)) {
        if (!causal) return multi_head_attention(X, X, p, heads, nullptr);
        const Mat mask = causal_mask(T);
        return multi_head_attention(X, X, p, heads, &mask);
    }
    expect_rope_width(scheme, d_k);
    const Vec slopes = scheme == PositionScheme::alibi ? alibi_slopes(heads) : zeros(heads);
    const double minus_inf = -std::numeric_limits<double>::infinity(), root = std::sqrt(static_cast<double>(d_k));
    const Mat Q_all = matmul(X, p.W_Q, "X W^Q"), K_all = matmul(X, p.W_K, "X W^K"), V_all = matmul(X, p.W_V, "X W^V");
    MultiHeadResult r;
    r.weights = xt::empty<double>({heads, T, T});
    r.concat = xt::empty<double>({T, d_model});
    for (std::size_t i = 0; i < heads; ++i) {
        const std::size_t first = i * d_k, last = first + d_k;
        Mat Q = columns_of(Q_all, first, last), K = columns_of(K_all, first, last);
        if (scheme == PositionScheme::rope) Q = rotary_rotation(Q, std::size_t{0}), K = rotary_rotation(K, std::size_t{0});
        // S = Q K^T / sqrt(d_k) + B, and -inf wherever B is (the causal mask's rule)
        Mat S = dot_scores(Q, K);
        const Mat B = head_bias(scheme, causal, T, slopes(i));
        for (std::size_t k = 0; k < S.size(); ++k)
            S.data()[k] = B.data()[k] == minus_inf ? minus_inf : S.data()[k] / root + B.data()[k];
        const Mat A = softmax_rows(S);
        xt::view(r.weights, i, xt::all(), xt::all()) = A;
        set_columns(r.concat, first, matmul(A, columns_of(V_all, first, last), "A V_i"));
    }
    r.output = matmul(r.concat, p.W_O, "Concat W^O");
    return r;
}

MultiHeadGrads positioned_self_attention_backward(const Mat& X, const MultiHeadParams& p, std::size_t heads,
                                                  PositionScheme scheme, const MultiHeadResult& forward,
                                                  const Mat& dY) {
    if (!in_scores(scheme)) return multi_head_self_attention_backward(X, p, heads, forward, dY);
    const std::size_t T = X.shape(0), d_model = X.shape(1), d_k = head_width(d_model, heads);
    expect_rope_width(scheme, d_k);
    expect_shape("positioned self-attention backward dL/dY", dY, {T, d_model});
    expect_shape("positioned self-attention backward weights (kept by the forward)", forward.weights, {heads, T, T});
    MultiHeadGrads g;
    // 1. Y = Concat W^O
    g.params.W_O = matmul(transposed(forward.concat), dY, "Concat^T dY");
    const Mat d_concat = matmul_transposed(dY, p.W_O, "dY W_O^T");
    g.dX = zeros(T, d_model);
    const Mat Q_all = matmul(X, p.W_Q, "X W^Q"), K_all = matmul(X, p.W_K, "X W^K"), V_all = matmul(X, p.W_V, "X W^V");
    Mat dQ_all = xt::empty<double>({T, d_model}), dK_all = xt::empty<double>({T, d_model}),
        dV_all = xt::empty<double>({T, d_model});
    const bool rope = scheme == PositionScheme::rope;
    for (std::size_t i = 0; i < heads; ++i) {
        // 2. head i's attention backwards on the queries and keys the scores saw (turned, under RoPE)
        const std::size_t first = i * d_k, last = first + d_k;
        Mat Q = columns_of(Q_all, first, last), K = columns_of(K_all, first, last);
        if (rope) Q = rotary_rotation(Q, std::size_t{0}), K = rotary_rotation(K, std::size_t{0});
        const AttentionResult head{{}, slice_of(forward.weights, i), {}};
        AttentionGrads a = scaled_dot_product_attention_backward(Q, K, columns_of(V_all, first, last), head,
                                                                 columns_of(d_concat, first, last));
        // 3. back through the rotation to the projections, then to X head after head
        if (rope) a.dQ = rotary_rotation_transposed(a.dQ), a.dK = rotary_rotation_transposed(a.dK);
        set_columns(dQ_all, first, a.dQ), set_columns(dK_all, first, a.dK), set_columns(dV_all, first, a.dV);
        g.dX += matmul_transposed_columns(a.dQ, p.W_Q, first, last, "dQ_i W_i^Q^T");
        g.dX += matmul_transposed_columns(a.dK, p.W_K, first, last, "dK_i W_i^K^T");
        g.dX += matmul_transposed_columns(a.dV, p.W_V, first, last, "dV_i W_i^V^T");
    }
    // 4. the projections' gradients, every head's columns at once
    const Mat X_t = transposed(X);
    g.params.W_Q = matmul(X_t, dQ_all, "X^T dQ");
    g.params.W_K = matmul(X_t, dK_all, "X^T dK");
    g.params.W_V = matmul(X_t, dV_all, "X^T dV");
    return g;
}

StackForward positioned_encoder_stack(const Mat& X, const std::vector<BlockParams>& blocks,
                                      const LayerNormParams& final_norm, std::size_t heads, PositionScheme scheme) {
    if (!in_scores(scheme)) return transformer_stack(BlockKind::pre_ln, X, blocks, final_norm, heads, nullptr);
    StackForward s;
    Mat stream = X;
    for (const BlockParams& p : blocks) {
        // the pre-LN block (nn::pre_ln_block) with the scheme's self-attention
        BlockForward f;
        f.norm_1 = layer_norm(stream, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps);
        f.attention = positioned_self_attention(f.norm_1.output, p.attention, heads, scheme, false);
        f.residual_1 = stream + f.attention.output;
        f.norm_2 = layer_norm(f.residual_1, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps);
        f.feed_forward = position_wise_feed_forward(p.feed_forward, f.norm_2.output);
        f.residual_2 = f.residual_1 + f.feed_forward;
        f.output = f.residual_2;
        stream = f.output;
        s.blocks.push_back(std::move(f));
    }
    s.final_norm = layer_norm(stream, final_norm.gain, final_norm.bias, final_norm.eps);
    s.output = s.final_norm.output;
    return s;
}

StackGrads positioned_encoder_stack_backward(const Mat& X, const std::vector<BlockParams>& blocks,
                                             const LayerNormParams& final_norm, std::size_t heads,
                                             PositionScheme scheme, const StackForward& forward, const Mat& dY) {
    if (!in_scores(scheme))
        return transformer_stack_backward(BlockKind::pre_ln, X, blocks, final_norm, heads, nullptr, forward, dY);
    StackGrads g;
    g.blocks.resize(blocks.size());
    LayerNormGrads last = layer_norm_backward(forward.final_norm, final_norm.gain, dY);
    Mat d_stream = std::move(last.dX);
    g.final_norm = {std::move(last.dgain), std::move(last.dbias), 0.0};
    for (std::size_t l = blocks.size(); l-- > 0;) {
        const BlockParams& p = blocks[l];
        const BlockForward& f = forward.blocks[l];
        // 2. residual_2 = residual_1 + FFN(LN_2(residual_1))
        const FeedForwardGrads ffn = position_wise_feed_forward_backward(p.feed_forward, f.norm_2.output, d_stream);
        const LayerNormGrads ln_2 = layer_norm_backward(f.norm_2, p.norm_2.gain, ffn.dH);
        const Mat d_residual_1 = d_stream + ln_2.dX;
        // 1. residual_1 = X + MHA(LN_1(X)), the scheme's
        const MultiHeadGrads mha =
            positioned_self_attention_backward(f.norm_1.output, p.attention, heads, scheme, f.attention, d_residual_1);
        const LayerNormGrads ln_1 = layer_norm_backward(f.norm_1, p.norm_1.gain, mha.dX);
        d_stream = d_residual_1 + ln_1.dX;
        g.blocks[l] = {{ln_1.dgain, ln_1.dbias, 0.0}, mha.params, {ln_2.dgain, ln_2.dbias, 0.0}, ffn.params};
    }
    g.dX = d_stream;
    return g;
}

}  // namespace attn::nn
