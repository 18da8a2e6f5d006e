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
    const Mat d_concat = matmul_transposed(dY, p.W_O, "dY W_O^T");
    g.dX = zeros(T, d_model);
    const Mat X_t = transposed(X);
    // Every head's projections in one product each: head i's Q_i = X W_i^Q is columns
    // [i d_k, (i+1) d_k) of X W^Q, each entry the same sum in the same order (nn::matmul adds in the
    // order of k, entry by entry), and W_i^Q^T is columns [i d_k, (i+1) d_k) of W^Q, transposed as they
    // are packed (nn::matmul_transposed_columns): the numbers of the head-by-head products, without
    // copying and transposing each head's blocks (issues 34 and 43).
    const Mat Q_all = matmul(X, p.W_Q, "X W^Q"), K_all = matmul(X, p.W_K, "X W^K"), V_all = matmul(X, p.W_V, "X W^V");
    Mat dQ_all = xt::empty<double>({T, d_model}), dK_all = xt::empty<double>({T, d_model}),
        dV_all = xt::empty<double>({T, d_model});
    for (std::size_t i = 0; i < heads; ++i) {
        // 2. head i's attention backwards, from its own columns of dConcat
        const std::size_t first = i * d_k, last = first + d_k;
        const Mat Q = columns_of(Q_all, first, last), K = columns_of(K_all, first, last),
                  V = columns_of(V_all, first, last);
        const AttentionResult head{{}, slice_of(forward.weights, i), {}};
        const AttentionGrads a =
            scaled_dot_product_attention_backward(Q, K, V, head, columns_of(d_concat, first, last));
        // 3. through the projections to X, head after head (the order of the sums into dX)
        set_columns(dQ_all, first, a.dQ), set_columns(dK_all, first, a.dK), set_columns(dV_all, first, a.dV);
        g.dX += matmul_transposed_columns(a.dQ, p.W_Q, first, last, "dQ_i W_i^Q^T");
        g.dX += matmul_transposed_columns(a.dK, p.W_K, first, last, "dK_i W_i^K^T");
        g.dX += matmul_transposed_columns(a.dV, p.W_V, first, last, "dV_i W_i^V^T");
    }
    // 4. and to the projections' blocks of columns, every head's at once: X^T dQ_i is columns
    // [i d_k, (i+1) d_k) of X^T [dQ_1 .. dQ_h], entry by entry
    g.params.W_Q = matmul(X_t, dQ_all, "X^T dQ");
    g.params.W_K = matmul(X_t, dK_all, "X^T dK");
    g.params.W_V = matmul(X_t, dV_all, "X^T dV");
    return g;
}

}  // namespace attn::nn
