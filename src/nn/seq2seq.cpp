// The encoder-decoder of nn/seq2seq.hpp: forward, backward and greedy decoding.
// T_x = source words, T_y = target words, e = embedding width, u = GRU state width.
#include "nn/seq2seq.hpp"

#include "core/portable_math.hpp"
#include "nn/backward.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"

#include <xtensor/xview.hpp>

#include <algorithm>

namespace attn::nn {

namespace {

Mat one_row(const Vec& v) {
    Mat out = xt::empty<double>({std::size_t{1}, v.size()});
    std::copy(v.begin(), v.end(), out.begin());
    return out;
}

// What the encoder hands the decoder, and what its backward needs.
struct Encoded {
    Mat X, X_reversed;  // T_x x e, the source embeddings, and them in reverse order
    GruRun forward;     // over X
    GruRun backward;    // over X_reversed: its row t is h←_{T_x - t}
    Mat H;              // T_x x 2u annotations [h→_j; h←_j] (attention), T_x x u states h→_j (without)
    Vec s0;             // the decoder's first state: h←_1 with attention, h_T without
    Mat projected_keys; // T_x x d_a, U_a h_j for every j: the keys of the score, projected once (attention)
};

Encoded encode(const Seq2Seq& m, const std::vector<std::size_t>& src) {
    Encoded enc;
    enc.X = gather_rows(m.E_src, src);
    const std::size_t T = enc.X.shape(0), u = m.enc_fwd.hidden_width();
    enc.forward = gru_forward(m.enc_fwd, enc.X, xt::zeros<double>({u}));
    if (!m.attention) {
        enc.H = enc.forward.states;
        enc.s0 = row_of(enc.H, T - 1);
        return enc;
    }
    // a bidirectional encoder — Bahdanau et al. 2015, section 3.2
    enc.X_reversed = reversed_rows(enc.X);
    enc.backward = gru_forward(m.enc_bwd, enc.X_reversed, xt::zeros<double>({u}));
    enc.H = xt::empty<double>({T, 2 * u});
    xt::view(enc.H, xt::all(), xt::range(0, u)) = enc.forward.states;
    xt::view(enc.H, xt::all(), xt::range(u, 2 * u)) = reversed_rows(enc.backward.states);
    // the backward GRU's last state has read the whole sentence, ending at its first word: the
    // decoder starts from it, as s_0 = tanh(W_s h←_1) does in Bahdanau et al. 2015, appendix A.2.2
    enc.s0 = row_of(enc.backward.states, T - 1);
    enc.projected_keys = matmul_transposed(enc.H, m.U_a, "H U_a^T");
    return enc;
}

// One decoder step, everything its backward needs.
struct DecoderStep {
    Mat projected_query;  // 1 x d_a, W_a s_{i-1} (attention only)
    Mat alpha;            // 1 x T_x (attention only)
    Vec input;  // [y_{i-1}; c_i]
    GruStep gru;
    Vec probabilities;  // softmax(W_o s_i + b_o)
};

DecoderStep decoder_step(const Seq2Seq& m, const Encoded& enc, const Vec& s_prev, std::size_t y_prev) {
    DecoderStep step;
    Vec c = row_of(enc.H, enc.H.shape(0) - 1);
    if (m.attention) {
        // e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j), c_i = sum_j alpha_ij h_j — Bahdanau et al. 2015, eqs. 5-6
        // (additive_scores' numbers, with the keys projected once per sentence in encode)
        step.projected_query = one_row(matvec(m.W_a, s_prev, "W_a s_{i-1}"));
        step.alpha = softmax_rows(additive_scores_projected(step.projected_query, enc.projected_keys, m.v_a));
        c = row_of(matmul(step.alpha, enc.H, "alpha H"), 0);
    }
    const std::size_t e = m.E_tgt.shape(1);
    step.input = xt::empty<double>({e + c.size()});
    xt::view(step.input, xt::range(0, e)) = xt::row(m.E_tgt, static_cast<std::ptrdiff_t>(y_prev));
    xt::view(step.input, xt::range(e, e + c.size())) = c;
    step.gru = gru_step(m.dec, step.input, s_prev);
    step.probabilities = softmax(matvec(m.W_o, step.gru.state, "W_o s_i") + m.b_o);
    return step;
}

std::size_t argmax(const Vec& p) {
    return static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
}

void add_into(GruParams& g, const GruGrads& d) {
    g.W_z += d.dW_z;
    g.U_z += d.dU_z;
    g.b_z += d.db_z;
    g.W_r += d.dW_r;
    g.U_r += d.dU_r;
    g.b_r += d.db_r;
    g.W_h += d.dW_h;
    g.U_h += d.dU_h;
    g.b_h += d.db_h;
}

void gru_blocks(GruParams& p, std::vector<Block>& out) {
    for (Mat* W : {&p.W_z, &p.U_z, &p.W_r, &p.U_r, &p.W_h, &p.U_h}) out.push_back({W->data(), W->size()});
    for (Vec* b : {&p.b_z, &p.b_r, &p.b_h}) out.push_back({b->data(), b->size()});
}

struct Forward {
    Encoded enc;
    std::vector<Vec> states;  // s_0 .. s_{T_y}
    std::vector<DecoderStep> steps;
    Seq2SeqPass pass;
};

Forward forward(const Seq2Seq& m, const std::vector<std::size_t>& src, const std::vector<std::size_t>& dec_in,
                const std::vector<std::size_t>& dec_out) {
    if (src.empty() || dec_in.size() != dec_out.size() || dec_in.empty())
        throw ShapeError("seq2seq: a sentence pair needs a source word and as many decoder inputs as outputs");
    Forward f;
    f.enc = encode(m, src);
    f.states.push_back(f.enc.s0);
    if (m.attention) f.pass.weights = xt::empty<double>({dec_in.size(), src.size()});
    for (std::size_t i = 0; i < dec_in.size(); ++i) {
        f.steps.push_back(decoder_step(m, f.enc, f.states.back(), dec_in[i]));
        const DecoderStep& step = f.steps.back();
        f.states.push_back(step.gru.state);
        f.pass.loss -= portable::log(step.probabilities(dec_out[i]));
        f.pass.predicted.push_back(argmax(step.probabilities));
        if (m.attention) xt::row(f.pass.weights, static_cast<std::ptrdiff_t>(i)) = xt::row(step.alpha, 0);
    }
    return f;
}

}  // namespace

Seq2Seq zeros_like(const Seq2Seq& m) {
    Seq2Seq z = m;
    for (const Block& b : blocks(z)) std::fill(b.data, b.data + b.size, 0.0);
    return z;
}

std::vector<Block> blocks(Seq2Seq& m) {
    std::vector<Block> out;
    out.push_back({m.E_src.data(), m.E_src.size()});
    out.push_back({m.E_tgt.data(), m.E_tgt.size()});
    gru_blocks(m.enc_fwd, out);
    if (m.attention) gru_blocks(m.enc_bwd, out);
    gru_blocks(m.dec, out);
    if (m.attention) {
        out.push_back({m.W_a.data(), m.W_a.size()});
        out.push_back({m.U_a.data(), m.U_a.size()});
        out.push_back({m.v_a.data(), m.v_a.size()});
    }
    out.push_back({m.W_o.data(), m.W_o.size()});
    out.push_back({m.b_o.data(), m.b_o.size()});
    return out;
}

Seq2SeqPass seq2seq_forward(const Seq2Seq& m, const std::vector<std::size_t>& src,
                            const std::vector<std::size_t>& dec_in, const std::vector<std::size_t>& dec_out) {
    return forward(m, src, dec_in, dec_out).pass;
}

Seq2SeqPass seq2seq_backward(const Seq2Seq& m, const std::vector<std::size_t>& src,
                             const std::vector<std::size_t>& dec_in, const std::vector<std::size_t>& dec_out,
                             Seq2Seq& grads) {
    Forward f = forward(m, src, dec_in, dec_out);
    const Mat& H = f.enc.H;
    const std::size_t T = H.shape(0), u = m.dec.hidden_width(), e = m.E_tgt.shape(1);
    Mat dH = xt::zeros<double>({T, H.shape(1)});
    Mat d_projected_keys;  // summed over the decoder steps, then taken through U_a once
    if (m.attention) d_projected_keys = xt::zeros<double>({T, m.U_a.shape(0)});
    GruGrads dec_grads = zero_gru_grads(m.dec);
    Vec ds = xt::zeros<double>({u});
    for (std::size_t i = f.steps.size(); i-- > 0;) {
        const DecoderStep& step = f.steps[i];
        // 1. L_i = -log softmax(z)_{y_i}, z = W_o s_i + b_o: dL/dz = p - onehot(y_i)
        Vec dz = step.probabilities;
        dz(dec_out[i]) -= 1.0;
        add_outer_product(grads.W_o, dz, step.gru.state);
        grads.b_o += dz;
        ds += matvec_transposed(m.W_o, dz, "W_o^T dz");
        // 2. the decoder step: its input [y_{i-1}; c_i] and its state s_{i-1}
        const GruStepGrads g = gru_step_backward(m.dec, step.input, f.states[i], step.gru, ds, dec_grads);
        xt::row(grads.E_tgt, static_cast<std::ptrdiff_t>(dec_in[i])) += xt::view(g.dx, xt::range(0, e));
        const Vec dc = xt::view(g.dx, xt::range(e, g.dx.size()));
        ds = g.dh_prev;
        if (!m.attention) {
            xt::row(dH, static_cast<std::ptrdiff_t>(T - 1)) += dc;
            continue;
        }
        // 3. c_i = alpha_i H: h_j gets alpha_ij dc, alpha_ij gets h_j . dc; then the softmax and the score
        for (std::size_t j = 0; j < T; ++j) xt::row(dH, static_cast<std::ptrdiff_t>(j)) += step.alpha(0, j) * dc;
        const Mat dE = softmax_rows_backward(step.alpha, one_row(matvec(H, dc, "H dc")));
        // the score's backward (additive_scores_backward's, split at the projections): the query
        // s_{i-1} gets W_a^T dP_q now, the keys' share is summed over i and taken through U_a after the loop
        const ProjectedScoreGrads score =
            additive_scores_projected_backward(step.projected_query, f.enc.projected_keys, m.v_a, dE);
        const Vec d_query = row_of(score.d_projected_q, 0);
        ds += matvec_transposed(m.W_a, d_query, "W_a^T dP_q");
        add_outer_product(grads.W_a, d_query, f.states[i]);
        grads.v_a += score.dv;
        d_projected_keys += score.d_projected_k;
    }
    if (m.attention) {
        dH += matmul(d_projected_keys, m.U_a, "dP_k U_a");
        grads.U_a += matmul(transposed(d_projected_keys), H, "dP_k^T H");
    }
    add_into(grads.dec, dec_grads);
    // 4. s_0, then the encoder by backpropagation through time
    const Vec zero = xt::zeros<double>({u});
    Mat dX;
    if (m.attention) {
        const Mat dH_fwd = xt::view(dH, xt::all(), xt::range(0, u));
        Mat dH_bwd = reversed_rows(xt::view(dH, xt::all(), xt::range(u, 2 * u)));
        xt::row(dH_bwd, static_cast<std::ptrdiff_t>(T - 1)) += ds;  // s_0 = h←_1, the backward run's last state
        const GruRunGrads gf = gru_backward(m.enc_fwd, f.enc.X, zero, f.enc.forward, dH_fwd);
        const GruRunGrads gb = gru_backward(m.enc_bwd, f.enc.X_reversed, zero, f.enc.backward, dH_bwd);
        add_into(grads.enc_fwd, gf.params);
        add_into(grads.enc_bwd, gb.params);
        dX = gf.dX + reversed_rows(gb.dX);
    } else {
        xt::row(dH, static_cast<std::ptrdiff_t>(T - 1)) += ds;  // s_0 = h_T
        const GruRunGrads gf = gru_backward(m.enc_fwd, f.enc.X, zero, f.enc.forward, dH);
        add_into(grads.enc_fwd, gf.params);
        dX = gf.dX;
    }
    for (std::size_t j = 0; j < T; ++j)
        xt::row(grads.E_src, static_cast<std::ptrdiff_t>(src[j])) += xt::row(dX, static_cast<std::ptrdiff_t>(j));
    return f.pass;
}

std::vector<std::size_t> greedy_decode(const Seq2Seq& m, const std::vector<std::size_t>& src, std::size_t sos,
                                       std::size_t eos, std::size_t max_words, Mat* weights) {
    const Encoded enc = encode(m, src);
    std::vector<std::size_t> words;
    std::vector<Mat> alphas;
    Vec s = enc.s0;
    std::size_t y = sos;
    while (words.size() < max_words) {
        const DecoderStep step = decoder_step(m, enc, s, y);
        s = step.gru.state;
        y = argmax(step.probabilities);
        if (y == eos) break;
        words.push_back(y);
        alphas.push_back(step.alpha);
    }
    if (weights && m.attention) {
        *weights = xt::zeros<double>({words.size(), src.size()});
        for (std::size_t i = 0; i < words.size(); ++i)
            xt::row(*weights, static_cast<std::ptrdiff_t>(i)) = xt::row(alphas[i], 0);
    }
    return words;
}

}  // namespace attn::nn
