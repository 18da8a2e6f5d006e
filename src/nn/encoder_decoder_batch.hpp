// The Transformer encoder-decoder of nn/encoder_decoder.hpp trained on a whole batch at once (issue 43):
// the batch's sentences stacked one under another, so that every linear layer (the projections, W^O,
// the position-wise network, the output layer) is one product over every token of the batch instead of
// one per sentence, and each weight's gradient one product summed over all of them. Only attention
// looks inside a sentence: each sentence's rows attend to its own rows (under the causal mask in the
// decoder), head by head, sentences and heads split between threads.
// N_x, N_y = source and target tokens of the whole batch; T_x, T_y = one sentence's; d_model, h as in
// nn/encoder_decoder.hpp.
//
// The numbers: each row of a product is the sum its sentence alone would give (nn::matmul sums every
// entry in the order of k), the norms go row by row, and attention is the fast path's (online softmax,
// within a few ulp of the lessons' two-pass softmax): each sentence's loss is within rounding of
// nn::encoder_decoder_forward's, and the gradient differs from the per-sentence sum in rounding and the
// order of its sums (over a stack's tokens in one product, rather than sentence by sentence);
// tests/test_encoder_decoder.cpp holds both to tolerances. For training whose numbers are reported
// (translation::Training, fast): every lesson sums sentence by sentence.
#pragma once

#include "core/tensor.hpp"
#include "nn/encoder_decoder.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

// Sentences stacked: sentence s is rows [start[s], start[s + 1]) of a matrix (start[0] = 0).
struct Segments {
    std::vector<std::size_t> start{0};
    std::size_t count() const { return start.size() - 1; }
    std::size_t rows() const { return start.back(); }
    std::size_t length(std::size_t s) const { return start[s + 1] - start[s]; }
};

// The segments of sentences of these lengths, in order.
Segments segments_of(const std::vector<std::size_t>& lengths);

// Multi-head attention within each sentence of a stack: sentence s's queries (its rows of X_q) attend
// to its own keys and values (its rows of X_kv) only, head by head through the fast path
// (nn::fast_attention_forward: the online softmax, no T_q x T_k matrix held), sentences and heads split
// between the threads.
struct SegmentedAttention {
    Mat Q, K, V;               // N_q x d_model and N_k x d_model: X_q W^Q, X_kv W^K, X_kv W^V
    std::vector<Vec> row_lse;  // sentence s, head i at s h + i: each query's log-sum-exp of its scores (T_q)
    Mat concat;                // N_q x d_model, Concat(head_1, ..., head_h), sentence under sentence
    Mat output;                // N_q x d_model, Concat W^O
};

// As multi_head_attention(X_q of sentence s, X_kv of sentence s, p, heads, causal mask or none) for every
// sentence s, within rounding (the online softmax; fused in Arithmetic::native). `queries` and `keys`
// segment X_q and X_kv into the same number of sentences; causal (self-attention: the same segments)
// hides each query's later keys.
SegmentedAttention segmented_attention(const Mat& X_q, const Segments& queries, const Mat& X_kv,
                                       const Segments& keys, const MultiHeadParams& p, std::size_t heads,
                                       bool causal);

struct SegmentedAttentionGrads {
    Mat dX_q;   // N_q x d_model, through the queries
    Mat dX_kv;  // N_k x d_model, through the keys and the values
    MultiHeadParams params;
};

// Its backward: dW^O = Concat^T dO, dConcat = dO W^O^T; each sentence's head i through
// nn::fast_attention_backward (from its output and log-sum-exps, recomputing the weights tile by tile);
// then dX_q = dQ W^Q^T, dX_kv = dK W^K^T + dV W^V^T and dW^Q = X_q^T dQ, dW^K = X_kv^T dK,
// dW^V = X_kv^T dV, each over every token of the batch at once. `causal` as the forward's.
SegmentedAttentionGrads segmented_attention_backward(const Mat& X_q, const Segments& queries, const Mat& X_kv,
                                                     const Segments& keys, const MultiHeadParams& p,
                                                     std::size_t heads, const SegmentedAttention& forward,
                                                     const Mat& dO, bool causal);

// One sentence pair with teacher forcing, as encoder_decoder_backward takes it.
struct TeacherForcedPair {
    std::vector<std::size_t> src, dec_in, dec_out;
};

// dL/d(every weight) of the loss summed over the batch, shaped like m, and that loss in `loss` (sentence
// by sentence, in order): the batch stacked, in the calling thread's arithmetic (nn::thread_arithmetic),
// its products and attention on for_each_row's threads (nn::ScopedThreads). The same bytes whatever the
// number of threads.
EncoderDecoder encoder_decoder_batch_gradient(const EncoderDecoder& m, const std::vector<TeacherForcedPair>& batch,
                                              double& loss);

// The losses of every sentence of the batch by the stacked forward alone.
std::vector<double> encoder_decoder_batch_losses(const EncoderDecoder& m, const std::vector<TeacherForcedPair>& batch);

}  // namespace attn::nn
