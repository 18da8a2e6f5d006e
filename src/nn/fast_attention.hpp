// Attention for speed, output only: softmax(Q K^T / sqrt(d_k) (+ causal mask)) V without the
// T_q x T_k scores or weights, in blocks of queries against blocks of keys with a running maximum
// and sum per query (the bookkeeping of nn::tiled_attention), the tiles multiplied by the vectorised
// kernels and the query blocks shared between two threads. For the benchmark (tests/bench) and
// for callers that want only O: no lesson records its numbers, which differ from
// nn::scaled_dot_product_attention's in the last bits (another order of additions).
// T_q = queries, T_k = keys/values, d_k = query/key width, d_v = value width.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// Q: T_q x d_k, K: T_k x d_k, V: T_k x d_v; returns T_q x d_v. With `causal` (T_q = T_k) query i
// sees keys j <= i, and key blocks wholly after a query block are not computed. Memory besides
// the result: K transposed (T_k x d_k) and per query block a 64 x 256 tile. Throws ShapeError on
// mismatched shapes, std::invalid_argument for `causal` with T_q != T_k.
Mat fast_attention(const Mat& Q, const Mat& K, const Mat& V, bool causal);

}  // namespace attn::nn
