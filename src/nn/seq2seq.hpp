// A trainable encoder-decoder translating one sequence of word ids into another, in two shapes:
// with additive attention (Bahdanau et al. 2015: a bidirectional GRU encoder, a context c_i per
// target word) and without (Cho et al. 2014 / Sutskever et al. 2014: one context c = h_T for every
// target word). Forward with teacher forcing, its backward through the nn backward passes, greedy
// decoding until <eos>.
// T_x = source words, T_y = target words (with <eos>), e = embedding width, u = GRU state width,
// d_a = width of the additive score's tanh layer, V_src / V_tgt = vocabulary sizes.
#pragma once

#include "core/tensor.hpp"
#include "nn/optimizer.hpp"
#include "nn/rnn.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

// The weights of one model. Gradients use the same struct (every tensor shaped like its weight).
struct Seq2Seq {
    bool attention = true;
    Mat E_src;                 // V_src x e, source word embeddings
    Mat E_tgt;                 // V_tgt x e, target word embeddings (the decoder reads y_{i-1})
    GruParams enc_fwd;         // e -> u, reads x_1 .. x_T
    GruParams enc_bwd;         // e -> u, reads x_T .. x_1 (attention model only)
    GruParams dec;             // [y_{i-1}; c_i] -> u; c_i is 2u wide with attention, u without
    Mat W_a, U_a;              // d_a x u and d_a x 2u: the additive score (attention only)
    Vec v_a;                   // d_a
    Mat W_o;                   // V_tgt x u, the output layer
    Vec b_o;                   // V_tgt
};

// The model drawn by the caller's weights, with every weight set to zero: where gradients accumulate.
Seq2Seq zeros_like(const Seq2Seq& m);

// Every weight of m as blocks, always in the same order: what an optimizer walks and what a
// digest reads. The attention weights are absent from a model without attention.
std::vector<Block> blocks(Seq2Seq& m);

// One sentence pair with teacher forcing: the decoder reads y_0 = <sos>, y_1, .., y_{T_y - 1}
// (dec_in) and predicts y_1, .., y_{T_y} = <eos> (dec_out).
struct Seq2SeqPass {
    double loss = 0.0;                   // sum_i -log p(y_i | y_<i, x), natural log
    std::vector<std::size_t> predicted;  // argmax_w p(w | y_<i, x) at each step
    Mat weights;                         // T_y x T_x, alpha_ij (attention only; empty otherwise)
};

// The forward pass: L = -sum_i log softmax(W_o s_i + b_o)_{y_i} — the likelihood of Cho et al. 2014, eq. 3.
Seq2SeqPass seq2seq_forward(const Seq2Seq& m, const std::vector<std::size_t>& src,
                            const std::vector<std::size_t>& dec_in, const std::vector<std::size_t>& dec_out);

// The forward pass, then dL/d(every weight) added to `grads` (shaped like m); returns the forward.
// The output layer and softmax by hand (dz = p - onehot(y)); the decoder steps by gru_step_backward;
// the attention by softmax_rows_backward and additive_scores_projected_backward (the keys projected
// once per sentence); the encoder by gru_backward.
Seq2SeqPass seq2seq_backward(const Seq2Seq& m, const std::vector<std::size_t>& src,
                             const std::vector<std::size_t>& dec_in, const std::vector<std::size_t>& dec_out,
                             Seq2Seq& grads);

// Greedy decoding (Sutskever et al. 2014, section 3.1, with a beam of one): from y_0 = <sos>, feed
// the decoder its own most likely word until it says <eos> or `max_words` words are out (the <eos>
// is not returned). `weights`, when not null, receives alpha (words out x T_x; attention only).
std::vector<std::size_t> greedy_decode(const Seq2Seq& m, const std::vector<std::size_t>& src, std::size_t sos,
                                       std::size_t eos, std::size_t max_words, Mat* weights = nullptr);

}  // namespace attn::nn
