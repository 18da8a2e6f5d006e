// Scaled dot-product attention, softmax(Q K^T / sqrt(d_k)) V — Vaswani et al. 2017, eq. 1 (see
// nn/self_attention.hpp).
// The classroom exercise scaled-attention; the student's version is lessons/exercises/scaled_attention.cpp.
// T_q = queries, T_k = keys/values, d_k = query/key width, d_v = value width.
#include "nn/self_attention.hpp"

#include "nn/linalg.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"

#include <cmath>
#include <limits>

namespace attn::nn {

namespace {

// S_ij / sqrt(d_k), and -inf wherever M_ij is -inf (+inf + -inf would be NaN), else S_ij + M_ij; in
// place, so that no second T_q x T_k matrix is made.
void scale_and_mask(Mat& scores, double divisor, const Mat* mask) {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    double* s = scores.data();
    const std::size_t n = scores.size();
    for (std::size_t k = 0; k < n; ++k) s[k] /= divisor;
    if (mask)
        for (std::size_t k = 0; k < n; ++k) s[k] = mask->data()[k] == minus_inf ? minus_inf : s[k] + mask->data()[k];
}

void expect_values_per_key(const Mat& K, const Mat& V) {
    if (K.shape(0) != V.shape(0))
        throw ShapeError("attention: keys " + shape_string(shape_of(K)) + " and values " + shape_string(shape_of(V)) +
                         " must have the same number of rows");
}

}  // namespace

// 1. scores Q K^T, 2. divided by sqrt(d_k) (and masked) in place: the numbers of scaled_dot_scores
// (and of the mask's rule) without their T_q x T_k temporaries, 3. softmax along each row, 4. outputs.
AttentionResult scaled_dot_product_attention(const Mat& Q, const Mat& K, const Mat& V) {
    expect_values_per_key(K, V);
    AttentionResult r;
    r.scores = dot_scores(Q, K);
    scale_and_mask(r.scores, std::sqrt(static_cast<double>(K.shape(1))), nullptr);
    r.weights = softmax_rows(r.scores);
    r.output = matmul(r.weights, V, "A V");
    return r;
}

AttentionResult scaled_dot_product_attention(const Mat& Q, const Mat& K, const Mat& V, const Mat& mask) {
    expect_values_per_key(K, V);
    AttentionResult r;
    r.scores = dot_scores(Q, K);
    expect_shape("attention mask", mask, shape_of(r.scores));
    scale_and_mask(r.scores, std::sqrt(static_cast<double>(K.shape(1))), &mask);
    r.weights = softmax_rows(r.scores);
    r.output = matmul(r.weights, V, "A V");
    return r;
}

}  // namespace attn::nn
