// The decoder-only language model (see nn/language_model.hpp).
// T = positions, d_model = model width, V = vocabulary.
#include "nn/language_model.hpp"

#include "core/portable_math.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <algorithm>
#include <string>

namespace attn::nn {

LanguageModel decoder_only(const EncoderDecoder& m) {
    LanguageModel lm;
    lm.heads = m.heads;
    lm.E = m.E_tgt;
    lm.P = m.P_tgt;
    for (const DecoderBlockParams& b : m.decoder) lm.blocks.push_back({b.norm_1, b.self_attention, b.norm_3, b.feed_forward});
    lm.norm = m.decoder_norm;
    lm.W_o = m.W_o;
    lm.b_o = m.b_o;
    return lm;
}

std::vector<NamedEntries> named_tensors(LanguageModel& m) {
    std::vector<NamedEntries> out = {named_entries("E", m.E)};
    if (m.P.size() > 0) out.push_back(named_entries("P", m.P));
    for (std::size_t l = 0; l < m.blocks.size(); ++l)
        for (NamedEntries e : block_tensors(m.blocks[l])) {
            e.name = "blk" + std::to_string(l + 1) + "." + e.name;
            out.push_back(e);
        }
    out.push_back(named_entries("g", m.norm.gain));
    out.push_back(named_entries("b", m.norm.bias));
    out.push_back(named_entries("W_o", m.W_o));
    out.push_back(named_entries("b_o", m.b_o));
    return out;
}

std::vector<Block> blocks(LanguageModel& m) {
    std::vector<Block> out;
    for (const NamedEntries& e : named_tensors(m)) out.push_back({e.data, e.size});
    return out;
}

LanguageModel zeros_like(const LanguageModel& m) {
    LanguageModel z = m;
    for (const Block& b : blocks(z)) std::fill(b.data, b.data + b.size, 0.0);
    return z;
}

namespace {

struct LmPass {
    Mat X;
    StackForward stack;
    Mat P;  // T x V
};

LmPass lm_run(const LanguageModel& m, const std::vector<std::size_t>& in) {
    if (in.empty()) throw ShapeError("language model: the input needs a word");
    LmPass pass;
    pass.X = embedded_inputs(m.E, m.P, in);
    const Mat causal = causal_mask(in.size());
    pass.stack = transformer_stack(BlockKind::pre_ln, pass.X, m.blocks, m.norm, m.heads, &causal);
    pass.P = softmax_rows(output_logits(pass.stack.output, m.W_o, m.b_o));
    return pass;
}

double lm_loss_of(const Mat& P, const std::vector<std::size_t>& out) {
    if (out.size() != P.shape(0)) throw ShapeError("language model: one next word per input word is needed");
    double loss = 0.0;
    for (std::size_t t = 0; t < out.size(); ++t) {
        if (out[t] >= P.shape(1))
            throw ShapeError("language model: word " + std::to_string(out[t]) + " is not among the " +
                             std::to_string(P.shape(1)) + " words");
        loss -= portable::log(P(t, out[t]));
    }
    return loss;
}

}  // namespace

Mat next_word_probabilities(const LanguageModel& m, const std::vector<std::size_t>& in) { return lm_run(m, in).P; }

LanguageModelPass language_model_forward(const LanguageModel& m, const std::vector<std::size_t>& in,
                                         const std::vector<std::size_t>& out) {
    LanguageModelPass pass;
    pass.P = lm_run(m, in).P;
    pass.loss = lm_loss_of(pass.P, out);
    return pass;
}

double language_model_backward(const LanguageModel& m, const std::vector<std::size_t>& in,
                               const std::vector<std::size_t>& out, LanguageModel& grads) {
    const LmPass pass = lm_run(m, in);
    const double loss = lm_loss_of(pass.P, out);
    LanguageModel g = zeros_like(m);
    // 1. the output layer, then the stack (its last norm included) and the inputs
    OutputLayerGrads o = output_layer_backward(pass.P, out, pass.stack.output, m.W_o);
    g.W_o = std::move(o.dW_o);
    g.b_o = std::move(o.db_o);
    const Mat causal = causal_mask(in.size());
    const StackGrads s =
        transformer_stack_backward(BlockKind::pre_ln, pass.X, m.blocks, m.norm, m.heads, &causal, pass.stack, o.dZ);
    g.blocks = s.blocks;
    g.norm.gain = s.final_norm.gain;
    g.norm.bias = s.final_norm.bias;
    add_embedding_grads(g.E, g.P, in, s.dX);
    // 2. added to what `grads` holds, tensor by tensor
    const std::vector<Block> into = blocks(grads), from = blocks(g);
    if (into.size() != from.size()) throw ShapeError("language model backward: grads is not shaped like the model");
    for (std::size_t b = 0; b < into.size(); ++b) {
        if (into[b].size != from[b].size) throw ShapeError("language model backward: grads is not shaped like the model");
        for (std::size_t k = 0; k < into[b].size; ++k) into[b].data[k] += from[b].data[k];
    }
    return loss;
}

}  // namespace attn::nn
