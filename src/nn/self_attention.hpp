// Scaled dot-product attention in matrix form, with masks.
// T_q = queries, T_k = keys/values, d_k = query/key width, d_v = value width.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// T x T: 0 where j <= i, -inf where j > i: position i sees itself and the past only.
// Added to the scores before the softmax (Vaswani et al. 2017, section 3.2.3).
Mat causal_mask(std::size_t T);

// T_q x T_k: 0 for the first `valid_keys` columns, -inf for the padding after them.
Mat padding_mask(std::size_t T_q, std::size_t T_k, std::size_t valid_keys);

// T_q x T_k: also -inf on every row past `valid_queries`. A padded query then has no key to
// look at: its weights and its output come out as exact zeros (see masked_softmax), not as an
// average of the real tokens that looks meaningful and is not.
Mat padding_mask(std::size_t T_q, std::size_t T_k, std::size_t valid_queries, std::size_t valid_keys);

// softmax_j(S_ij + M_ij) row by row. Masked entries get weight exactly 0, whatever their score
// (even +inf); a row masked everywhere gets all zeros (see nn::softmax), so no NaN leaks out of
// a padded row. Throws ShapeError when the shapes differ.
Mat masked_softmax(const Mat& scores, const Mat& mask);

// Everything one attention call computes, so a lesson can show each stage.
struct AttentionResult {
    Mat scores;   // T_q x T_k, Q K^T / sqrt(d_k) (+ mask)
    Mat weights;  // T_q x T_k, rows sum to 1 (or 0 where a row is fully masked)
    Mat output;   // T_q x d_v, weights V
};

// Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V    — Vaswani et al. 2017, eq. 1
// Q: T_q x d_k, K: T_k x d_k, V: T_k x d_v.
AttentionResult scaled_dot_product_attention(const Mat& Q, const Mat& K, const Mat& V);

// The same with a mask (T_q x T_k of 0 and -inf) added to the scores before the softmax.
AttentionResult scaled_dot_product_attention(const Mat& Q, const Mat& K, const Mat& V, const Mat& mask);

}  // namespace attn::nn
