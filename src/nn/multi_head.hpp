// Multi-head attention: h scaled dot-product attentions side by side, each on its own slice
// of the projected queries, keys and values.
// h = heads, T_q = queries, T_k = keys/values, d_model = model width, d_k = d_v = d_model / h.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// One d_k-wide slice per head: h x T x d_k; slice i holds columns [i d_k, (i+1) d_k) of a T x d_model matrix.
using Heads = xt::xtensor<double, 3>;

// d_k = d_model / h. Throws ShapeError naming both numbers when h is 0 or does not divide d_model.
std::size_t head_width(std::size_t d_model, std::size_t heads);

// T x d_model -> h x T x d_k: head i gets columns [i d_k, (i+1) d_k) of X, copied contiguously.
Heads split_heads(const Mat& X, std::size_t heads);

// h x T x d_v -> T x (h d_v): Concat(head_1, ..., head_h), head i in columns [i d_v, (i+1) d_v).
// The inverse of split_heads.
Mat merge_heads(const Heads& heads);

// The projections of one multi-head layer, as in Vaswani et al. 2017, section 3.2.2, where
// W_i^Q = columns [i d_k, (i+1) d_k) of W_Q (likewise W_K, W_V) and head i's block of W^O is rows
// [i d_v, (i+1) d_v) of W_O. All four are d_model x d_model.
struct MultiHeadParams {
    Mat W_Q, W_K, W_V, W_O;
};

// Whether multi_head_attention keeps every head's T_q x T_k weights (h T_q T_k doubles) or
// only the T_q x d_model results.
enum class HeadWeights { keep, drop };

struct MultiHeadResult {
    Heads weights;  // h x T_q x T_k, softmax(Q_i K_i^T / sqrt(d_k) + M); 0 x 0 x 0 when dropped
    Mat concat;     // T_q x d_model, Concat(head_1, ..., head_h)
    Mat output;     // T_q x d_model, Concat(head_1, ..., head_h) W^O
};

// MultiHead = Concat(head_1, ..., head_h) W^O,  head_i = Attention(X_q W_i^Q, X_kv W_i^K, X_kv W_i^V)
// — Vaswani et al. 2017, section 3.2.2 (Attention is eq. 1). Goes head by head, so that besides
// its results only one head's projections and T_q x T_k matrices are held at a time; every product
// is nn::matmul on contiguous operands. X_q: T_q x d_model, X_kv: T_k x d_model; mask: T_q x T_k
// of 0 and -inf added to every head's scores before the softmax (section 3.2.3), or nullptr.
MultiHeadResult multi_head_attention(const Mat& X_q, const Mat& X_kv, const MultiHeadParams& p, std::size_t heads,
                                     const Mat* mask = nullptr, HeadWeights keep = HeadWeights::keep);

}  // namespace attn::nn
