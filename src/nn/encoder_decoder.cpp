// The Transformer encoder-decoder of nn/encoder_decoder.hpp: cross-attention's backward, the decoder
// block forward and backward, the whole model's forward, loss, backward and greedy decoding.
// T_y = decoder tokens, T_x = encoder tokens, d_model = model width, h = heads.
#include "nn/encoder_decoder.hpp"

#include "core/portable_math.hpp"
#include "nn/backward.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace attn::nn {

CrossAttentionGrads cross_attention_backward(const Mat& Y, const Mat& H, const MultiHeadParams& p, std::size_t heads,
                                             const MultiHeadResult& forward, const Mat& dO) {
    const std::size_t T_y = Y.shape(0), T_x = H.shape(0), d_model = Y.shape(1), d_k = head_width(d_model, heads);
    expect_shape("cross-attention backward H", H, {T_x, d_model});
    expect_shape("cross-attention backward dL/dO", dO, {T_y, d_model});
    expect_shape("cross-attention backward weights (kept by the forward)", forward.weights, {heads, T_y, T_x});
    CrossAttentionGrads g;
    // 1. O = Concat W^O
    g.params.W_O = matmul(transposed(forward.concat), dO, "Concat^T dO");
    const Mat d_concat = matmul_transposed(dO, p.W_O, "dO W_O^T");
    g.dY = zeros(T_y, d_model), g.dH = zeros(T_x, d_model);
    const Mat Y_t = transposed(Y), H_t = transposed(H);
    // every head's projections in one product each, as in multi_head_self_attention_backward
    // (nn/backward_multi_head.cpp): the same numbers as head by head
    const Mat Q_all = matmul(Y, p.W_Q, "Y W^Q"), K_all = matmul(H, p.W_K, "H W^K"), V_all = matmul(H, p.W_V, "H W^V");
    Mat dQ_all = xt::empty<double>({T_y, d_model}), dK_all = xt::empty<double>({T_x, d_model}),
        dV_all = xt::empty<double>({T_x, d_model});
    for (std::size_t i = 0; i < heads; ++i) {
        // 2. head i: queries from Y, keys and values from H
        const std::size_t first = i * d_k, last = first + d_k;
        const Mat Q = columns_of(Q_all, first, last), K = columns_of(K_all, first, last),
                  V = columns_of(V_all, first, last);
        const AttentionResult head{{}, slice_of(forward.weights, i), {}};
        const AttentionGrads a =
            scaled_dot_product_attention_backward(Q, K, V, head, columns_of(d_concat, first, last));
        // 3. the queries' gradient goes to Y, the keys' and values' to H, head after head
        set_columns(dQ_all, first, a.dQ), set_columns(dK_all, first, a.dK), set_columns(dV_all, first, a.dV);
        g.dY += matmul_transposed_columns(a.dQ, p.W_Q, first, last, "dQ_i W_i^Q^T");
        g.dH += matmul_transposed_columns(a.dK, p.W_K, first, last, "dK_i W_i^K^T");
        g.dH += matmul_transposed_columns(a.dV, p.W_V, first, last, "dV_i W_i^V^T");
    }
    // 4. the projections' gradients, every head's columns at once
    g.params.W_Q = matmul(Y_t, dQ_all, "Y^T dQ");
    g.params.W_K = matmul(H_t, dK_all, "H^T dK");
    g.params.W_V = matmul(H_t, dV_all, "H^T dV");
    return g;
}

DecoderBlockForward decoder_block(const Mat& X, const Mat& H, const DecoderBlockParams& p, std::size_t heads,
                                  const Mat& causal, PositionScheme scheme) {
    DecoderBlockForward f;
    // 1. masked self-attention on the normalised stream, added to the stream
    f.norm_1 = layer_norm(X, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps);
    f.self_attention = scheme == PositionScheme::rope || scheme == PositionScheme::alibi
                           ? positioned_self_attention(f.norm_1.output, p.self_attention, heads, scheme, true)
                           : multi_head_attention(f.norm_1.output, f.norm_1.output, p.self_attention, heads, &causal);
    f.residual_1 = X + f.self_attention.output;
    // 2. cross-attention: the normalised stream asks, the encoder's output answers
    f.norm_2 = layer_norm(f.residual_1, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps);
    f.cross = cross_attention(f.norm_2.output, H, p.cross_attention, heads);
    f.residual_2 = f.residual_1 + f.cross.output;
    // 3. the position-wise network
    f.norm_3 = layer_norm(f.residual_2, p.norm_3.gain, p.norm_3.bias, p.norm_3.eps);
    f.feed_forward = position_wise_feed_forward(p.feed_forward, f.norm_3.output);
    f.output = f.residual_2 + f.feed_forward;
    return f;
}

DecoderBlockGrads decoder_block_backward(const Mat& H, const DecoderBlockParams& p, std::size_t heads,
                                         const DecoderBlockForward& f, const Mat& dY, PositionScheme scheme) {
    DecoderBlockGrads g;
    // 3. output = R_2 + FFN(LN_3(R_2))
    const FeedForwardGrads ffn = position_wise_feed_forward_backward(p.feed_forward, f.norm_3.output, dY);
    const LayerNormGrads ln_3 = layer_norm_backward(f.norm_3, p.norm_3.gain, ffn.dH);
    const Mat d_residual_2 = dY + ln_3.dX;
    // 2. R_2 = R_1 + CrossAttention(LN_2(R_1), H)
    const CrossAttentionGrads cross =
        cross_attention_backward(f.norm_2.output, H, p.cross_attention, heads, f.cross, d_residual_2);
    const LayerNormGrads ln_2 = layer_norm_backward(f.norm_2, p.norm_2.gain, cross.dY);
    const Mat d_residual_1 = d_residual_2 + ln_2.dX;
    // 1. R_1 = X + MHA(LN_1(X)), causal (the mask is a constant: its effect is in the kept weights)
    const MultiHeadGrads self = positioned_self_attention_backward(f.norm_1.output, p.self_attention, heads, scheme,
                                                                   f.self_attention, d_residual_1);
    const LayerNormGrads ln_1 = layer_norm_backward(f.norm_1, p.norm_1.gain, self.dX);
    g.dX = d_residual_1 + ln_1.dX;
    g.dH = cross.dH;
    g.params = {{ln_1.dgain, ln_1.dbias, 0.0}, self.params,           {ln_2.dgain, ln_2.dbias, 0.0},
                cross.params,                  {ln_3.dgain, ln_3.dbias, 0.0}, ffn.params};
    return g;
}

std::vector<NamedEntries> decoder_block_tensors(DecoderBlockParams& p) {
    return {named_entries("g_1", p.norm_1.gain),           named_entries("b_1", p.norm_1.bias),
            named_entries("W_Q", p.self_attention.W_Q),    named_entries("W_K", p.self_attention.W_K),
            named_entries("W_V", p.self_attention.W_V),    named_entries("W_O", p.self_attention.W_O),
            named_entries("g_2", p.norm_2.gain),           named_entries("b_2", p.norm_2.bias),
            named_entries("X_Q", p.cross_attention.W_Q),   named_entries("X_K", p.cross_attention.W_K),
            named_entries("X_V", p.cross_attention.W_V),   named_entries("X_O", p.cross_attention.W_O),
            named_entries("g_3", p.norm_3.gain),           named_entries("b_3", p.norm_3.bias),
            named_entries("W_1", p.feed_forward.W_1),      named_entries("b_ff1", p.feed_forward.b_1),
            named_entries("W_2", p.feed_forward.W_2),      named_entries("b_ff2", p.feed_forward.b_2)};
}

std::vector<NamedEntries> named_tensors(EncoderDecoder& m) {
    std::vector<NamedEntries> out = {named_entries("E_src", m.E_src), named_entries("E_tgt", m.E_tgt)};
    if (m.P_src.size() > 0) out.push_back(named_entries("P_src", m.P_src));
    if (m.P_tgt.size() > 0) out.push_back(named_entries("P_tgt", m.P_tgt));
    const auto add = [&](const std::string& prefix, std::vector<NamedEntries> part) {
        for (NamedEntries& e : part) {
            e.name = prefix + "." + e.name;
            out.push_back(e);
        }
    };
    for (std::size_t l = 0; l < m.encoder.size(); ++l) add("enc" + std::to_string(l + 1), block_tensors(m.encoder[l]));
    out.push_back(named_entries("enc.g", m.encoder_norm.gain));
    out.push_back(named_entries("enc.b", m.encoder_norm.bias));
    for (std::size_t l = 0; l < m.decoder.size(); ++l)
        add("dec" + std::to_string(l + 1), decoder_block_tensors(m.decoder[l]));
    out.push_back(named_entries("dec.g", m.decoder_norm.gain));
    out.push_back(named_entries("dec.b", m.decoder_norm.bias));
    out.push_back(named_entries("W_o", m.W_o));
    out.push_back(named_entries("b_o", m.b_o));
    return out;
}

std::vector<Block> blocks(EncoderDecoder& m) {
    std::vector<Block> out;
    for (const NamedEntries& e : named_tensors(m)) out.push_back({e.data, e.size});
    return out;
}

namespace {

// Zeros of the shapes of m's parts, allocated as zeros rather than copied and then cleared: the backward
// takes one per sentence, and copying the weights first was a tenth of a training step at d_model = 256.
template <class E>
E zeros_shaped(const E& x) {
    return xt::zeros<double>(x.shape());
}

LayerNormParams zeros_shaped(const LayerNormParams& p) { return {zeros_shaped(p.gain), zeros_shaped(p.bias), p.eps}; }

MultiHeadParams zeros_shaped(const MultiHeadParams& p) {
    return {zeros_shaped(p.W_Q), zeros_shaped(p.W_K), zeros_shaped(p.W_V), zeros_shaped(p.W_O)};
}

FeedForward zeros_shaped(const FeedForward& p) {
    return {zeros_shaped(p.W_1), zeros_shaped(p.b_1), zeros_shaped(p.W_2), zeros_shaped(p.b_2)};
}

BlockParams zeros_shaped(const BlockParams& p) {
    return {zeros_shaped(p.norm_1), zeros_shaped(p.attention), zeros_shaped(p.norm_2), zeros_shaped(p.feed_forward)};
}

DecoderBlockParams zeros_shaped(const DecoderBlockParams& p) {
    return {zeros_shaped(p.norm_1), zeros_shaped(p.self_attention), zeros_shaped(p.norm_2),
            zeros_shaped(p.cross_attention), zeros_shaped(p.norm_3), zeros_shaped(p.feed_forward)};
}

}  // namespace

EncoderDecoder zeros_like(const EncoderDecoder& m) {
    EncoderDecoder z;
    z.heads = m.heads;
    z.positions = m.positions;
    z.E_src = zeros_shaped(m.E_src);
    z.E_tgt = zeros_shaped(m.E_tgt);
    z.P_src = zeros_shaped(m.P_src);
    z.P_tgt = zeros_shaped(m.P_tgt);
    for (const BlockParams& b : m.encoder) z.encoder.push_back(zeros_shaped(b));
    z.encoder_norm = zeros_shaped(m.encoder_norm);
    for (const DecoderBlockParams& b : m.decoder) z.decoder.push_back(zeros_shaped(b));
    z.decoder_norm = zeros_shaped(m.decoder_norm);
    z.W_o = zeros_shaped(m.W_o);
    z.b_o = zeros_shaped(m.b_o);
    return z;
}

Mat embedded_inputs(const Mat& table, const Mat& positions, const std::vector<std::size_t>& ids) {
    if (positions.size() == 0) return transformer_inputs(table, ids);
    if (positions.shape(1) != table.shape(1))
        throw ShapeError("learned positions: the table has " + std::to_string(positions.shape(1)) +
                         " columns, the embeddings " + std::to_string(table.shape(1)));
    if (ids.size() > positions.shape(0))
        throw ShapeError("learned positions: a sequence of " + std::to_string(ids.size()) +
                         " tokens is longer than the " + std::to_string(positions.shape(0)) + " positions learned");
    Mat X = scaled_embeddings(table, ids);
    for (std::size_t t = 0; t < ids.size(); ++t)
        for (std::size_t j = 0; j < X.shape(1); ++j) X(t, j) += positions(t, j);
    return X;
}

Mat output_logits(const Mat& Z, const Mat& W_o, const Vec& b_o) {
    Mat logits = matmul_transposed(Z, W_o, "Z W_o^T");
    for (std::size_t i = 0; i < logits.shape(0); ++i) add_to_row(logits, i, b_o);
    return logits;
}

OutputLayerGrads output_layer_backward(const Mat& P, const std::vector<std::size_t>& targets, const Mat& Z,
                                       const Mat& W_o) {
    if (targets.size() != P.shape(0)) throw ShapeError("output layer backward: one target per row of P is needed");
    for (const std::size_t y : targets)
        if (y >= P.shape(1))
            throw ShapeError("output layer backward: target " + std::to_string(y) + " is not among the " +
                             std::to_string(P.shape(1)) + " words");
    Mat d_logits = P;
    for (std::size_t i = 0; i < targets.size(); ++i) d_logits(i, targets[i]) -= 1.0;
    OutputLayerGrads g;
    g.dW_o = matmul(transposed(d_logits), Z, "dlogits^T Z");
    g.db_o = column_sums(d_logits);
    g.dZ = matmul(d_logits, W_o, "dlogits W_o");
    return g;
}

void add_embedding_grads(Mat& dE, Mat& dP, const std::vector<std::size_t>& ids, const Mat& dX) {
    const double scale = std::sqrt(static_cast<double>(dX.shape(1)));
    for (std::size_t t = 0; t < ids.size(); ++t) add_scaled_to_row(dE, ids[t], scale, row_of(dX, t));
    if (dP.size() > 0)
        for (std::size_t t = 0; t < ids.size(); ++t) add_scaled_to_row(dP, t, 1.0, row_of(dX, t));
}

namespace {

// Everything the backward needs of one pass.
struct Pass {
    Mat X_src, X_tgt;  // the stacks' inputs
    StackForward encoder;
    std::vector<DecoderBlockForward> decoder;
    LayerNormResult final_norm;
    Mat P;             // T_y x V_tgt, softmax(Z W_o^T + b_o)
};

// A stack's input: E[ids] sqrt(d_model), plus the positions when the scheme adds them to this stack.
Mat stack_inputs(const EncoderDecoder& m, const Mat& table, const Mat& positions, const std::vector<std::size_t>& ids,
                 bool decoder) {
    if (adds_positions(m.positions, decoder)) return embedded_inputs(table, positions, ids);
    if (positions.size() > 0)
        throw ShapeError(std::string("encoder-decoder: a learned position table in a model whose positions are ") +
                         position_scheme_name(m.positions));
    return scaled_embeddings(table, ids);
}

// The encoder stack on a source's inputs, its self-attention as the scheme says.
StackForward encode(const EncoderDecoder& m, const Mat& X_src) {
    return positioned_encoder_stack(X_src, m.encoder, m.encoder_norm, m.heads, m.positions);
}

// The decoder stack on the encoder's output H: its blocks, then the final norm.
void decode(const EncoderDecoder& m, const Mat& H, const std::vector<std::size_t>& dec_in, Pass& pass) {
    pass.X_tgt = stack_inputs(m, m.E_tgt, m.P_tgt, dec_in, true);
    const Mat causal = causal_mask(dec_in.size());
    Mat stream = pass.X_tgt;
    for (const DecoderBlockParams& p : m.decoder) {
        pass.decoder.push_back(decoder_block(stream, H, p, m.heads, causal, m.positions));
        stream = pass.decoder.back().output;
    }
    pass.final_norm = layer_norm(stream, m.decoder_norm.gain, m.decoder_norm.bias, m.decoder_norm.eps);
    pass.P = softmax_rows(output_logits(pass.final_norm.output, m.W_o, m.b_o));
}

Pass run(const EncoderDecoder& m, const std::vector<std::size_t>& src, const std::vector<std::size_t>& dec_in) {
    if (src.empty() || dec_in.empty())
        throw ShapeError("encoder-decoder: a sentence pair needs a source word and a decoder input");
    Pass pass;
    pass.X_src = stack_inputs(m, m.E_src, m.P_src, src, false);
    pass.encoder = encode(m, pass.X_src);
    decode(m, pass.encoder.output, dec_in, pass);
    return pass;
}

std::size_t row_argmax(const Mat& P, std::size_t i) {
    std::size_t best = 0;
    for (std::size_t j = 1; j < P.shape(1); ++j)
        if (P(i, j) > P(i, best)) best = j;
    return best;
}

EncoderDecoderPass summary(const Pass& pass, const std::vector<std::size_t>& dec_out) {
    if (dec_out.size() != pass.P.shape(0))
        throw ShapeError("encoder-decoder: as many decoder outputs as inputs are needed");
    EncoderDecoderPass out;
    for (std::size_t i = 0; i < dec_out.size(); ++i) {
        out.loss -= portable::log(pass.P(i, dec_out[i]));
        out.predicted.push_back(row_argmax(pass.P, i));
    }
    for (const DecoderBlockForward& f : pass.decoder) out.cross_weights.push_back(f.cross.weights);
    return out;
}

}  // namespace

EncoderDecoderPass encoder_decoder_forward(const EncoderDecoder& m, const std::vector<std::size_t>& src,
                                           const std::vector<std::size_t>& dec_in,
                                           const std::vector<std::size_t>& dec_out) {
    return summary(run(m, src, dec_in), dec_out);
}

EncoderDecoderPass encoder_decoder_backward(const EncoderDecoder& m, const std::vector<std::size_t>& src,
                                            const std::vector<std::size_t>& dec_in,
                                            const std::vector<std::size_t>& dec_out, EncoderDecoder& grads) {
    const Pass pass = run(m, src, dec_in);
    const EncoderDecoderPass out = summary(pass, dec_out);
    EncoderDecoder g = zeros_like(m);
    // 1. L = -sum_i log P_{i, y_i}: dlogits = P - onehot(y)
    OutputLayerGrads out_layer = output_layer_backward(pass.P, dec_out, pass.final_norm.output, m.W_o);
    g.W_o = std::move(out_layer.dW_o);
    g.b_o = std::move(out_layer.db_o);
    const LayerNormGrads final_norm = layer_norm_backward(pass.final_norm, m.decoder_norm.gain, out_layer.dZ);
    g.decoder_norm.gain = final_norm.dgain;
    g.decoder_norm.bias = final_norm.dbias;
    // 2. the decoder blocks, last first; every block's cross-attention sends a gradient to H
    const Mat& H = pass.encoder.output;
    Mat d_stream = final_norm.dX, dH = zeros(H.shape(0), H.shape(1));
    for (std::size_t l = m.decoder.size(); l-- > 0;) {
        DecoderBlockGrads b = decoder_block_backward(H, m.decoder[l], m.heads, pass.decoder[l], d_stream, m.positions);
        d_stream = std::move(b.dX);
        dH += b.dH;
        g.decoder[l] = std::move(b.params);
    }
    add_embedding_grads(g.E_tgt, g.P_tgt, dec_in, d_stream);
    // 3. the encoder stack, from the gradient of its output H
    const StackGrads enc = positioned_encoder_stack_backward(pass.X_src, m.encoder, m.encoder_norm, m.heads,
                                                             m.positions, pass.encoder, dH);
    for (std::size_t l = 0; l < m.encoder.size(); ++l) g.encoder[l] = enc.blocks[l];
    g.encoder_norm.gain = enc.final_norm.gain;
    g.encoder_norm.bias = enc.final_norm.bias;
    add_embedding_grads(g.E_src, g.P_src, src, enc.dX);
    const std::vector<Block> into = blocks(grads), from = blocks(g);
    for (std::size_t b = 0; b < into.size(); ++b)
        for (std::size_t k = 0; k < into[b].size; ++k) into[b].data[k] += from[b].data[k];
    return out;
}

std::vector<std::size_t> encoder_decoder_greedy(const EncoderDecoder& m, const std::vector<std::size_t>& src,
                                                std::size_t sos, std::size_t eos, std::size_t max_words) {
    const Pass first = run(m, src, {sos});
    const Mat& H = first.encoder.output;
    std::vector<std::size_t> in = {sos}, words;
    while (words.size() < max_words) {
        Pass pass;
        decode(m, H, in, pass);
        const std::size_t y = row_argmax(pass.P, in.size() - 1);
        if (y == eos) break;
        words.push_back(y);
        in.push_back(y);
    }
    return words;
}

Mat encoder_output(const EncoderDecoder& m, const std::vector<std::size_t>& src) {
    if (src.empty()) throw ShapeError("encoder-decoder: a source sentence needs a word");
    return encode(m, stack_inputs(m, m.E_src, m.P_src, src, false)).output;
}

Mat decoder_probabilities(const EncoderDecoder& m, const Mat& H, const std::vector<std::size_t>& dec_in) {
    if (dec_in.empty()) throw ShapeError("encoder-decoder: the decoder needs an input word");
    Pass pass;
    decode(m, H, dec_in, pass);
    return pass.P;
}

}  // namespace attn::nn
