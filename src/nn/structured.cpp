#include "nn/structured.hpp"

#include "nn/activations.hpp"
#include "nn/linalg.hpp"
#include "nn/softmax.hpp"

#include <xtensor/xmath.hpp>

namespace attn::nn {

StructuredAttention structured_self_attention(const Mat& H, const Mat& W_s1, const Mat& W_s2) {
    expect_shape("structured attention W_s1", W_s1, {W_s1.shape(0), H.shape(1)});
    expect_shape("structured attention W_s2", W_s2, {W_s2.shape(0), W_s1.shape(0)});
    StructuredAttention s;
    // 1. one d_a-wide tanh feature column per token
    s.hidden = tanh_each(matmul(W_s1, xt::eval(xt::transpose(H)), "W_s1 H^T"));
    // 2. each hop scores every token; 3. normalise over the tokens; 4. average the states
    s.scores = matmul(W_s2, s.hidden, "W_s2 tanh(W_s1 H^T)");
    s.weights = softmax_rows(s.scores);
    s.embedding = matmul(s.weights, H, "A H");
    return s;
}

}  // namespace attn::nn
