// The backward of multi-head self-attention (see nn/backward.hpp), head by head through the
// backward of scaled dot-product attention (nn/backward_attention.cpp).
// h = heads, T = tokens, d_model = model width, d_k = d_v = d_model / h.
#include "nn/backward.hpp"

#include "nn/linalg.hpp"
#include "nn/reductions.hpp"

namespace attn::nn {

MultiHeadGrads multi_head_self_attention_backward(const Mat& X, const MultiHeadParams& p, std::size_t heads,
                                                  const MultiHeadResult& forward, const Mat& dY) {
    const std::size_t T = X.shape(0), d_model = X.shape(1), d_k = head_width(d_model, heads);
    expect_shape("multi-head backward dL/dY", dY, {T, d_model});
    expect_shape("multi-head backward weights (kept by the forward)", forward.weights, {heads, T, T});
    MultiHeadGrads g;
    // 1. Y = Concat W^O
    g.params.W_O = matmul(transposed(forward.concat), dY, "Concat^T dY");
    const Mat d_concat = matmul(dY, transposed(p.W_O), "dY W_O^T");
    g.params.W_Q = zeros(d_model, d_model), g.params.W_K = zeros(d_model, d_model);
    g.params.W_V = zeros(d_model, d_model), g.dX = zeros(T, d_model);
    const Mat X_t = transposed(X);
    for (std::size_t i = 0; i < heads; ++i) {
        // 2. head i's attention backwards, from its own columns of dConcat
        const std::size_t first = i * d_k, last = first + d_k;
        const Mat W_Qi = columns_of(p.W_Q, first, last), W_Ki = columns_of(p.W_K, first, last),
                  W_Vi = columns_of(p.W_V, first, last);
        const Mat Q = matmul(X, W_Qi, "X W_i^Q"), K = matmul(X, W_Ki, "X W_i^K"), V = matmul(X, W_Vi, "X W_i^V");
        const AttentionResult head{{}, slice_of(forward.weights, i), {}};
        const AttentionGrads a =
            scaled_dot_product_attention_backward(Q, K, V, head, columns_of(d_concat, first, last));
        // 3. through the projections to their blocks of columns and to X
        set_columns(g.params.W_Q, first, matmul(X_t, a.dQ, "X^T dQ_i"));
        set_columns(g.params.W_K, first, matmul(X_t, a.dK, "X^T dK_i"));
        set_columns(g.params.W_V, first, matmul(X_t, a.dV, "X^T dV_i"));
        g.dX += matmul(a.dQ, transposed(W_Qi), "dQ_i W_i^Q^T");
        g.dX += matmul(a.dK, transposed(W_Ki), "dK_i W_i^K^T");
        g.dX += matmul(a.dV, transposed(W_Vi), "dV_i W_i^V^T");
    }
    return g;
}

}  // namespace attn::nn
