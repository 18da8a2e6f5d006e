#include "nn/self_attention.hpp"

#include "nn/linalg.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"

#include <limits>

namespace attn::nn {

namespace {

const double minus_inf = -std::numeric_limits<double>::infinity();

// S + M, except that a masked entry is -inf whatever its score: +inf + -inf would be NaN and
// spoil the whole row.
Mat masked_scores(const Mat& scores, const Mat& mask) {
    expect_shape("attention mask", mask, shape_of(scores));
    Mat out = scores + mask;
    for (std::size_t i = 0; i < out.shape(0); ++i)
        for (std::size_t j = 0; j < out.shape(1); ++j)
            if (mask(i, j) == minus_inf) out(i, j) = minus_inf;
    return out;
}

void expect_values_per_key(const Mat& K, const Mat& V) {
    if (K.shape(0) != V.shape(0))
        throw ShapeError("attention: keys " + shape_string(shape_of(K)) + " and values " + shape_string(shape_of(V)) +
                         " must have the same number of rows");
}

}  // namespace

Mat causal_mask(std::size_t T) {
    Mat mask = xt::zeros<double>({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = i + 1; j < T; ++j) mask(i, j) = minus_inf;
    return mask;
}

Mat padding_mask(std::size_t T_q, std::size_t T_k, std::size_t valid_keys) {
    if (valid_keys > T_k)
        throw ShapeError("padding mask: " + std::to_string(valid_keys) + " valid keys out of " + std::to_string(T_k));
    Mat mask = xt::zeros<double>({T_q, T_k});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = valid_keys; j < T_k; ++j) mask(i, j) = minus_inf;
    return mask;
}

Mat padding_mask(std::size_t T_q, std::size_t T_k, std::size_t valid_queries, std::size_t valid_keys) {
    if (valid_queries > T_q)
        throw ShapeError("padding mask: " + std::to_string(valid_queries) + " valid queries out of " +
                         std::to_string(T_q));
    Mat mask = padding_mask(T_q, T_k, valid_keys);
    for (std::size_t i = valid_queries; i < T_q; ++i)
        for (std::size_t j = 0; j < T_k; ++j) mask(i, j) = minus_inf;
    return mask;
}

Mat masked_softmax(const Mat& scores, const Mat& mask) { return softmax_rows(masked_scores(scores, mask)); }

AttentionResult scaled_dot_product_attention(const Mat& Q, const Mat& K, const Mat& V) {
    expect_values_per_key(K, V);
    AttentionResult r;
    r.scores = scaled_dot_scores(Q, K);
    r.weights = softmax_rows(r.scores);
    r.output = matmul(r.weights, V, "A V");
    return r;
}

AttentionResult scaled_dot_product_attention(const Mat& Q, const Mat& K, const Mat& V, const Mat& mask) {
    expect_values_per_key(K, V);
    AttentionResult r;
    r.scores = masked_scores(scaled_dot_scores(Q, K), mask);
    r.weights = softmax_rows(r.scores);
    r.output = matmul(r.weights, V, "A V");
    return r;
}

}  // namespace attn::nn
