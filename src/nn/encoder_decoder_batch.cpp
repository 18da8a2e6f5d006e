// The encoder-decoder trained on a stacked batch (see nn/encoder_decoder_batch.hpp): attention within
// each sentence of a stack, its backward, and the whole model's forward and backward over a batch.
// N_q, N_k = stacked query and key rows, T_q, T_k = one sentence's, d_model = model width, h = heads.
#include "nn/encoder_decoder_batch.hpp"

#include "core/portable_math.hpp"
#include "nn/backward.hpp"
#include "nn/fast_attention.hpp"
#include "nn/kernels.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace attn::nn {

Segments segments_of(const std::vector<std::size_t>& lengths) {
    Segments s;
    for (const std::size_t n : lengths) s.start.push_back(s.start.back() + n);
    return s;
}

namespace {

// Rows [first, first + rows) and columns [col, col + width) of M, as a contiguous matrix.
Mat stacked_block(const Mat& M, std::size_t first, std::size_t rows, std::size_t col, std::size_t width) {
    Mat out = xt::empty<double>({rows, width});
    for (std::size_t r = 0; r < rows; ++r) {
        const double* from = M.data() + (first + r) * M.shape(1) + col;
        std::copy(from, from + width, out.data() + r * width);
    }
    return out;
}

// B into M from row `first` and column `col` on.
void set_stacked_block(Mat& M, std::size_t first, std::size_t col, const Mat& B) {
    for (std::size_t r = 0; r < B.shape(0); ++r)
        std::copy(B.data() + r * B.shape(1), B.data() + (r + 1) * B.shape(1),
                  M.data() + (first + r) * M.shape(1) + col);
}

void expect_segments(const char* what, const Mat& X, const Segments& s, std::size_t d_model) {
    if (X.shape(0) != s.rows() || X.shape(1) != d_model)
        throw ShapeError(std::string("segmented attention: ") + what + " " + shape_string(shape_of(X)) + " must be " +
                         std::to_string(s.rows()) + " x " + std::to_string(d_model) + " (its sentences' rows)");
}

// How many multiply-adds one sentence's heads take, as for_each_row counts the work of a row.
std::size_t head_work(const Segments& queries, const Segments& keys, std::size_t d_k) {
    const std::size_t n = std::max<std::size_t>(1, queries.count());
    return std::max<std::size_t>(1, (queries.rows() / n + 1) * (keys.rows() / n + 1) * d_k);
}

}  // namespace

SegmentedAttention segmented_attention(const Mat& X_q, const Segments& queries, const Mat& X_kv,
                                       const Segments& keys, const MultiHeadParams& p, std::size_t heads,
                                       bool causal) {
    const std::size_t d_model = p.W_Q.shape(0), d_k = head_width(d_model, heads);
    if (queries.count() != keys.count())
        throw ShapeError("segmented attention: " + std::to_string(queries.count()) + " sentences of queries but " +
                         std::to_string(keys.count()) + " of keys");
    expect_segments("X_q", X_q, queries, d_model);
    expect_segments("X_kv", X_kv, keys, d_model);
    SegmentedAttention r;
    r.Q = matmul(X_q, p.W_Q, "X_q W^Q"), r.K = matmul(X_kv, p.W_K, "X_kv W^K"), r.V = matmul(X_kv, p.W_V, "X_kv W^V");
    r.row_lse.resize(queries.count() * heads);
    r.concat = xt::empty<double>({queries.rows(), d_model});
    const Arithmetic arithmetic = thread_arithmetic();
    for_each_row(r.row_lse.size(), head_work(queries, keys, d_k), [&](std::size_t job) {
        const std::size_t s = job / heads, i = job % heads, T_q = queries.length(s), T_k = keys.length(s);
        FastAttentionForward head = fast_attention_forward(
            stacked_block(r.Q, queries.start[s], T_q, i * d_k, d_k), stacked_block(r.K, keys.start[s], T_k, i * d_k, d_k),
            stacked_block(r.V, keys.start[s], T_k, i * d_k, d_k), causal, arithmetic);
        set_stacked_block(r.concat, queries.start[s], i * d_k, head.output);
        r.row_lse[job] = std::move(head.L);
    });
    r.output = matmul(r.concat, p.W_O, "Concat(heads) W^O");
    return r;
}

SegmentedAttentionGrads segmented_attention_backward(const Mat& X_q, const Segments& queries, const Mat& X_kv,
                                                     const Segments& keys, const MultiHeadParams& p,
                                                     std::size_t heads, const SegmentedAttention& forward,
                                                     const Mat& dO, bool causal) {
    const std::size_t d_model = p.W_Q.shape(0), d_k = head_width(d_model, heads);
    expect_segments("X_q", X_q, queries, d_model);
    expect_segments("X_kv", X_kv, keys, d_model);
    expect_segments("dL/dO", dO, queries, d_model);
    if (forward.row_lse.size() != queries.count() * heads)
        throw ShapeError("segmented attention backward: the forward kept " + std::to_string(forward.row_lse.size()) +
                         " heads' log-sum-exps, not sentences x heads = " + std::to_string(queries.count() * heads));
    SegmentedAttentionGrads g;
    // 1. O = Concat W^O
    g.params.W_O = matmul(transposed(forward.concat), dO, "Concat^T dO");
    const Mat d_concat = matmul_transposed(dO, p.W_O, "dO W_O^T");
    // 2. each sentence's heads backwards from their outputs and log-sum-exps (FlashAttention's backward:
    // no T_q x T_k matrix kept or formed whole)
    Mat dQ = xt::empty<double>({queries.rows(), d_model}), dK = xt::empty<double>({keys.rows(), d_model}),
        dV = xt::empty<double>({keys.rows(), d_model});
    const Arithmetic arithmetic = thread_arithmetic();
    for_each_row(forward.row_lse.size(), head_work(queries, keys, d_k), [&](std::size_t job) {
        const std::size_t s = job / heads, i = job % heads, T_q = queries.length(s), T_k = keys.length(s);
        const std::size_t q0 = queries.start[s], k0 = keys.start[s], c0 = i * d_k;
        const FastAttentionGrads a = fast_attention_backward(
            stacked_block(forward.Q, q0, T_q, c0, d_k), stacked_block(forward.K, k0, T_k, c0, d_k),
            stacked_block(forward.V, k0, T_k, c0, d_k), stacked_block(forward.concat, q0, T_q, c0, d_k),
            forward.row_lse[job], stacked_block(d_concat, q0, T_q, c0, d_k), causal, arithmetic);
        set_stacked_block(dQ, q0, c0, a.dQ), set_stacked_block(dK, k0, c0, a.dK), set_stacked_block(dV, k0, c0, a.dV);
    });
    // 3. through the projections, every head and every sentence at once
    g.dX_q = matmul_transposed(dQ, p.W_Q, "dQ W^Q^T");
    g.dX_kv = matmul_transposed(dK, p.W_K, "dK W^K^T");
    g.dX_kv += matmul_transposed(dV, p.W_V, "dV W^V^T");
    const Mat X_q_t = transposed(X_q), X_kv_t = transposed(X_kv);
    g.params.W_Q = matmul(X_q_t, dQ, "X_q^T dQ");
    g.params.W_K = matmul(X_kv_t, dK, "X_kv^T dK");
    g.params.W_V = matmul(X_kv_t, dV, "X_kv^T dV");
    return g;
}

namespace {

struct EncoderBlockPass {
    LayerNormResult norm_1;
    SegmentedAttention attention;
    Mat residual_1;
    LayerNormResult norm_2;
    Mat output;
};

struct DecoderBlockPass {
    LayerNormResult norm_1;
    SegmentedAttention self_attention;
    Mat residual_1;
    LayerNormResult norm_2;
    SegmentedAttention cross;
    Mat residual_2;
    LayerNormResult norm_3;
    Mat output;
};

// Everything the backward needs of one stacked pass.
struct BatchPass {
    Segments src, tgt;
    std::vector<EncoderBlockPass> encoder;
    LayerNormResult encoder_norm;  // its output is H, N_x x d_model
    std::vector<DecoderBlockPass> decoder;
    LayerNormResult final_norm;
    Mat P;  // N_y x V_tgt
    std::vector<double> losses;
};

// The sentences' inputs, each as embedded_inputs gives it, one under another.
Mat stacked_inputs(const Mat& table, const Mat& positions, const Segments& s,
                   const std::vector<const std::vector<std::size_t>*>& ids) {
    Mat X = xt::empty<double>({s.rows(), table.shape(1)});
    for (std::size_t k = 0; k < ids.size(); ++k) set_stacked_block(X, s.start[k], 0, embedded_inputs(table, positions, *ids[k]));
    return X;
}

BatchPass run_batch(const EncoderDecoder& m, const std::vector<TeacherForcedPair>& batch) {
    if (batch.empty()) throw ShapeError("encoder-decoder batch: no sentence pair");
    if (m.positions != PositionScheme::added)
        throw ShapeError(std::string("encoder-decoder batch: the stacked training adds positions to the inputs only; "
                                     "a model whose positions are ") +
                         position_scheme_name(m.positions) + " trains sentence by sentence (nn::encoder_decoder_backward)");
    BatchPass pass;
    std::vector<std::size_t> src_lengths, tgt_lengths;
    std::vector<const std::vector<std::size_t>*> src_ids, tgt_ids;
    for (const TeacherForcedPair& p : batch) {
        if (p.src.empty() || p.dec_in.empty())
            throw ShapeError("encoder-decoder: a sentence pair needs a source word and a decoder input");
        if (p.dec_out.size() != p.dec_in.size())
            throw ShapeError("encoder-decoder: as many decoder outputs as inputs are needed");
        src_lengths.push_back(p.src.size()), tgt_lengths.push_back(p.dec_in.size());
        src_ids.push_back(&p.src), tgt_ids.push_back(&p.dec_in);
    }
    pass.src = segments_of(src_lengths), pass.tgt = segments_of(tgt_lengths);
    // the encoder: pre-LN blocks, then its final norm
    Mat stream = stacked_inputs(m.E_src, m.P_src, pass.src, src_ids);
    for (const BlockParams& p : m.encoder) {
        EncoderBlockPass f;
        f.norm_1 = layer_norm(stream, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps);
        f.attention = segmented_attention(f.norm_1.output, pass.src, f.norm_1.output, pass.src, p.attention, m.heads,
                                          false);
        f.residual_1 = stream + f.attention.output;
        f.norm_2 = layer_norm(f.residual_1, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps);
        f.output = f.residual_1 + position_wise_feed_forward(p.feed_forward, f.norm_2.output);
        stream = f.output;
        pass.encoder.push_back(std::move(f));
    }
    pass.encoder_norm = layer_norm(stream, m.encoder_norm.gain, m.encoder_norm.bias, m.encoder_norm.eps);
    const Mat& H = pass.encoder_norm.output;
    // the decoder: causal self-attention, cross-attention to H, the network
    stream = stacked_inputs(m.E_tgt, m.P_tgt, pass.tgt, tgt_ids);
    for (const DecoderBlockParams& p : m.decoder) {
        DecoderBlockPass f;
        f.norm_1 = layer_norm(stream, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps);
        f.self_attention = segmented_attention(f.norm_1.output, pass.tgt, f.norm_1.output, pass.tgt,
                                               p.self_attention, m.heads, true);
        f.residual_1 = stream + f.self_attention.output;
        f.norm_2 = layer_norm(f.residual_1, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps);
        f.cross = segmented_attention(f.norm_2.output, pass.tgt, H, pass.src, p.cross_attention, m.heads, false);
        f.residual_2 = f.residual_1 + f.cross.output;
        f.norm_3 = layer_norm(f.residual_2, p.norm_3.gain, p.norm_3.bias, p.norm_3.eps);
        f.output = f.residual_2 + position_wise_feed_forward(p.feed_forward, f.norm_3.output);
        stream = f.output;
        pass.decoder.push_back(std::move(f));
    }
    pass.final_norm = layer_norm(stream, m.decoder_norm.gain, m.decoder_norm.bias, m.decoder_norm.eps);
    pass.P = softmax_rows(output_logits(pass.final_norm.output, m.W_o, m.b_o));
    // each sentence's loss as encoder_decoder_forward sums it
    for (std::size_t s = 0; s < batch.size(); ++s) {
        double loss = 0.0;
        for (std::size_t t = 0; t < pass.tgt.length(s); ++t) {
            const std::size_t y = batch[s].dec_out[t];
            if (y >= pass.P.shape(1))
                throw ShapeError("encoder-decoder: target " + std::to_string(y) + " is not among the " +
                                 std::to_string(pass.P.shape(1)) + " words");
            loss -= portable::log(pass.P(pass.tgt.start[s] + t, y));
        }
        pass.losses.push_back(loss);
    }
    return pass;
}

LayerNormParams norm_grads(LayerNormGrads& g) { return {std::move(g.dgain), std::move(g.dbias), 0.0}; }

}  // namespace

std::vector<double> encoder_decoder_batch_losses(const EncoderDecoder& m, const std::vector<TeacherForcedPair>& batch) {
    return run_batch(m, batch).losses;
}

EncoderDecoder encoder_decoder_batch_gradient(const EncoderDecoder& m, const std::vector<TeacherForcedPair>& batch,
                                              double& loss) {
    const BatchPass pass = run_batch(m, batch);
    // zeros only where the gradient is added up row by row (the embeddings and positions); every other
    // tensor is a product's result, moved in
    EncoderDecoder g;
    g.heads = m.heads;
    g.E_src = xt::zeros<double>(m.E_src.shape()), g.E_tgt = xt::zeros<double>(m.E_tgt.shape());
    g.P_src = xt::zeros<double>(m.P_src.shape()), g.P_tgt = xt::zeros<double>(m.P_tgt.shape());
    g.encoder.resize(m.encoder.size());
    g.decoder.resize(m.decoder.size());
    // 1. the output layer, every target token at once
    std::vector<std::size_t> targets;
    for (const TeacherForcedPair& p : batch) targets.insert(targets.end(), p.dec_out.begin(), p.dec_out.end());
    OutputLayerGrads out = output_layer_backward(pass.P, targets, pass.final_norm.output, m.W_o);
    g.W_o = std::move(out.dW_o);
    g.b_o = std::move(out.db_o);
    LayerNormGrads final_norm = layer_norm_backward(pass.final_norm, m.decoder_norm.gain, out.dZ);
    g.decoder_norm = norm_grads(final_norm);
    // 2. the decoder blocks, last first; each cross-attention sends a gradient to H
    const Mat& H = pass.encoder_norm.output;
    Mat d_stream = std::move(final_norm.dX), dH = zeros(H.shape(0), H.shape(1));
    for (std::size_t l = m.decoder.size(); l-- > 0;) {
        const DecoderBlockParams& p = m.decoder[l];
        const DecoderBlockPass& f = pass.decoder[l];
        DecoderBlockParams& into = g.decoder[l];
        FeedForwardGrads ffn = position_wise_feed_forward_backward(p.feed_forward, f.norm_3.output, d_stream);
        LayerNormGrads ln_3 = layer_norm_backward(f.norm_3, p.norm_3.gain, ffn.dH);
        const Mat d_residual_2 = d_stream + ln_3.dX;
        SegmentedAttentionGrads cross = segmented_attention_backward(
            f.norm_2.output, pass.tgt, H, pass.src, p.cross_attention, m.heads, f.cross, d_residual_2, false);
        LayerNormGrads ln_2 = layer_norm_backward(f.norm_2, p.norm_2.gain, cross.dX_q);
        const Mat d_residual_1 = d_residual_2 + ln_2.dX;
        SegmentedAttentionGrads self = segmented_attention_backward(
            f.norm_1.output, pass.tgt, f.norm_1.output, pass.tgt, p.self_attention, m.heads, f.self_attention,
            d_residual_1, true);
        LayerNormGrads ln_1 = layer_norm_backward(f.norm_1, p.norm_1.gain, self.dX_q + self.dX_kv);
        d_stream = d_residual_1 + ln_1.dX;
        dH += cross.dX_kv;
        into = {norm_grads(ln_1), std::move(self.params), norm_grads(ln_2), std::move(cross.params), norm_grads(ln_3),
                std::move(ffn.params)};
    }
    for (std::size_t s = 0; s < batch.size(); ++s)
        add_embedding_grads(g.E_tgt, g.P_tgt, batch[s].dec_in, rows_of(d_stream, pass.tgt.start[s], pass.tgt.start[s + 1]));
    // 3. the encoder's final norm and blocks, from the gradient of H
    LayerNormGrads enc_norm = layer_norm_backward(pass.encoder_norm, m.encoder_norm.gain, dH);
    g.encoder_norm = norm_grads(enc_norm);
    d_stream = std::move(enc_norm.dX);
    for (std::size_t l = m.encoder.size(); l-- > 0;) {
        const BlockParams& p = m.encoder[l];
        const EncoderBlockPass& f = pass.encoder[l];
        FeedForwardGrads ffn = position_wise_feed_forward_backward(p.feed_forward, f.norm_2.output, d_stream);
        LayerNormGrads ln_2 = layer_norm_backward(f.norm_2, p.norm_2.gain, ffn.dH);
        const Mat d_residual_1 = d_stream + ln_2.dX;
        SegmentedAttentionGrads self = segmented_attention_backward(
            f.norm_1.output, pass.src, f.norm_1.output, pass.src, p.attention, m.heads, f.attention, d_residual_1,
            false);
        LayerNormGrads ln_1 = layer_norm_backward(f.norm_1, p.norm_1.gain, self.dX_q + self.dX_kv);
        d_stream = d_residual_1 + ln_1.dX;
        g.encoder[l] = {norm_grads(ln_1), std::move(self.params), norm_grads(ln_2), std::move(ffn.params)};
    }
    for (std::size_t s = 0; s < batch.size(); ++s)
        add_embedding_grads(g.E_src, g.P_src, batch[s].src, rows_of(d_stream, pass.src.start[s], pass.src.start[s + 1]));
    loss = 0.0;
    for (const double l : pass.losses) loss += l;
    return g;
}

}  // namespace attn::nn
