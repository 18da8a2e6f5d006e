// A decoder alone is a language model: the Transformer's decoder stack without cross-attention
// (each block lesson 11's pre-LN block under the causal mask), reading words and predicting the
// next one at every position, trained with the loss -sum_t log p(w_{t+1} | w_1..w_t); its
// forward, backward and the next word's distribution. The decoder-only models of Radford et al.
// 2018 are such a stack.
// T = positions, d_model = model width, h = heads, L = blocks, V = vocabulary.
#pragma once

#include "core/tensor.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/optimizer.hpp"
#include "nn/transformer.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

struct LanguageModel {
    std::size_t heads = 1;
    Mat E;                           // V x d_model: the inputs are E[ids] sqrt(d_model) + positions
    Mat P;                           // learned positions x d_model, or empty: the sinusoidal encoding
    std::vector<BlockParams> blocks; // L pre-LN blocks, causal
    LayerNormParams norm;            // the last norm
    Mat W_o;                         // V x d_model
    Vec b_o;                         // V
};

// The decoder of m without its cross-attention: each decoder block's LN_1, masked self-attention,
// LN_3 and network become a pre-LN block (LN_3 as its LN_2); the target embeddings, positions, last
// norm and output layer are m's.
LanguageModel decoder_only(const EncoderDecoder& m);

// Every trained tensor with its name ("E", "blk1.W_Q", .., "W_o", "b_o"), always in the same
// order; blocks() without the names; zeros_like() the same shapes filled with 0.
std::vector<NamedEntries> named_tensors(LanguageModel& m);
std::vector<Block> blocks(LanguageModel& m);
LanguageModel zeros_like(const LanguageModel& m);

// The next word's probabilities at every position of `in` (T x V): softmax(LN(Stack(X)) W_o^T +
// b_o), X = E[in] sqrt(d_model) + positions, the stack under the causal mask.
Mat next_word_probabilities(const LanguageModel& m, const std::vector<std::size_t>& in);

// One teacher-forced pass: P = next_word_probabilities(m, in) and L = -sum_t log P_{t, out_t}
// (natural log), `out` the word after each of `in` (T each).
struct LanguageModelPass {
    double loss = 0.0;
    Mat P;
};
LanguageModelPass language_model_forward(const LanguageModel& m, const std::vector<std::size_t>& in,
                                         const std::vector<std::size_t>& out);

// The forward, then dL/d(every weight) added to `grads` (shaped like m); returns L. The output
// layer by nn::output_layer_backward, the last norm, the stack by nn::transformer_stack_backward,
// the embeddings by nn::add_embedding_grads.
double language_model_backward(const LanguageModel& m, const std::vector<std::size_t>& in,
                               const std::vector<std::size_t>& out, LanguageModel& grads);

}  // namespace attn::nn
