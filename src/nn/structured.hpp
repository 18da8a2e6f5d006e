// Structured self-attention: a sentence embedding made of r attention hops over the encoder
// states, and the penalty that keeps the hops apart (Lin et al. 2017).
// n = tokens, 2u = width of the bidirectional encoder states, d_a = width of the tanh layer,
// r = hops (rows of the embedding matrix).
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// Everything one pass computes, so a lesson can show each stage.
struct StructuredAttention {
    Mat hidden;     // d_a x n, tanh(W_s1 H^T): one column per token
    Mat scores;     // r x n, W_s2 tanh(W_s1 H^T)
    Mat weights;    // r x n, A: each row a softmax over the n tokens
    Mat embedding;  // r x 2u, M = A H
};

// A = softmax(W_s2 tanh(W_s1 H^T)),  M = A H    — Lin et al. 2017, section 2.1, eqs. 6-7
// H: n x 2u, W_s1: d_a x 2u, W_s2: r x d_a. The softmax runs along each row, over the tokens.
// With one row, W_s2 = w_s2, this is the single vector a = softmax(w_s2 tanh(W_s1 H^T)) of
// eq. 5 and m = a H.
StructuredAttention structured_self_attention(const Mat& H, const Mat& W_s1, const Mat& W_s2);

// P = ||A A^T - I||_F^2    — Lin et al. 2017, section 2.2, eq. 8
// A: r x n. The diagonal of A A^T holds ||a_i||^2, the off-diagonal a_i . a_j; for rows that
// are distributions P is 0 exactly when every row is one-hot and no two rows pick the same token.
double redundancy_penalty(const Mat& A);

}  // namespace attn::nn
