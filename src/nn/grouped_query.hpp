// Fewer key-value heads than query heads: multi-query attention (Shazeer 2019: one key-value head
// shared by every query head) and grouped-query attention (Ainslie et al. 2023: h query heads in
// n_kv groups of h / n_kv, each group sharing one key-value head), which shrink the key-value cache
// by h / n_kv; converting a multi-head layer by mean-pooling its key and value heads (Ainslie et
// al. 2023, section 2.1).
// h = query heads, n_kv = key-value heads (dividing h), d_model = model width, d_k = d_model / h,
// T_q = queries, T_k = keys/values.
#pragma once

#include "core/tensor.hpp"
#include "nn/multi_head.hpp"

#include <cstddef>

namespace attn::nn {

// The projections of one grouped-query layer: W_Q and W_O d_model x d_model as in multi-head
// attention (MultiHeadParams), W_K and W_V d_model x (n_kv d_k): key-value head g is columns
// [g d_k, (g+1) d_k).
struct GroupedQueryParams {
    Mat W_Q, W_K, W_V, W_O;
};

// The key-value head query head i reads: i / (h / n_kv), so that query heads 0 .. h/n_kv - 1 share
// key-value head 0, the next h/n_kv head 1, and so on (contiguous groups, as Ainslie et al. 2023,
// figure 2, draw them; not i mod n_kv). ShapeError unless 1 <= n_kv <= h, n_kv divides h and i < h.
std::size_t kv_head_of(std::size_t query_head, std::size_t heads, std::size_t kv_heads);

// GQA = Concat(head_1, ..., head_h) W^O,  head_i = Attention(X_q W_i^Q, X_kv W_g^K, X_kv W_g^V),
// g = kv_head_of(i): multi-head attention whose query heads share key-value heads. Each shared key
// and value is computed once; every product and the softmax are nn::multi_head_attention's, so with
// n_kv = h (and W_K, W_V its d_model x d_model ones) the result is the same to the bit. mask:
// T_q x T_k of 0 and -inf, or nullptr. Returns the weights (h x T_q x T_k), Concat and the output.
MultiHeadResult grouped_query_attention(const Mat& X_q, const Mat& X_kv, const GroupedQueryParams& p,
                                        std::size_t heads, std::size_t kv_heads, const Mat* mask = nullptr);

// d_model x (n_kv d_k): key-value head g is the mean of the h / n_kv heads of group g of W
// (d_model x (h d_k)), summed in head order and divided by h / n_kv: how Ainslie et al. 2023
// (section 2.1) start a grouped-query model from a multi-head one. n_kv = h gives W itself.
Mat mean_pooled_heads(const Mat& W, std::size_t heads, std::size_t kv_heads);

// d_model x (h d_k): W_kv (d_model x (n_kv d_k)) with key-value head kv_head_of(i) copied into head
// i's columns: the multi-head layer that computes what the grouped-query layer computes.
Mat repeated_heads(const Mat& W_kv, std::size_t heads, std::size_t kv_heads);

// The grouped-query layer of a multi-head one: W_Q and W_O kept, W_K and W_V mean-pooled.
GroupedQueryParams grouped_query_params(const MultiHeadParams& p, std::size_t heads, std::size_t kv_heads);

}  // namespace attn::nn
