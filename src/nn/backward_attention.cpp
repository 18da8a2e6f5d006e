// The backward of scaled dot-product attention (see nn/backward.hpp; the forward is
// nn/self_attention_scaled.cpp). An exercise-sized function; a student's version would replace this file.
// T_q = queries, T_k = keys/values, d_k = query/key width, d_v = value width.
#include "nn/backward.hpp"

#include "nn/linalg.hpp"

#include <cmath>

namespace attn::nn {

// The forward's stages in reverse: 1. O = P V, 2. P = softmax(S), 3. S = Q K^T / sqrt(d_k) + M.
AttentionGrads scaled_dot_product_attention_backward(const Mat& Q, const Mat& K, const Mat& V,
                                                     const AttentionResult& forward, const Mat& dO) {
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    expect_shape("attention backward keys K", K, {T_k, d_k});
    expect_shape("attention backward values V", V, {T_k, d_v});
    expect_shape("attention backward weights P", forward.weights, {T_q, T_k});
    expect_shape("attention backward dL/d(output) dO", dO, {T_q, d_v});
    AttentionGrads g;
    // 1. O_i = sum_j P_ij v_j: each value receives the output gradients its weights sent it
    g.dV = matmul(transposed(forward.weights), dO, "P^T dO");
    g.dP = matmul(dO, transposed(V), "dO V^T");
    // 2. through each row's softmax; masked entries (P_ij = 0) get exactly 0, so no gradient reaches them
    g.dS = softmax_rows_backward(forward.weights, g.dP);
    // 3. the mask is a constant; the scale divides the gradient as it divided the scores
    const Mat dS_scaled = g.dS / std::sqrt(static_cast<double>(d_k));
    g.dQ = matmul(dS_scaled, K, "dS K");
    g.dK = matmul(transposed(dS_scaled), Q, "dS^T Q");
    return g;
}

}  // namespace attn::nn
