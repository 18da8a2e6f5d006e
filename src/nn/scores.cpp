#include "nn/scores.hpp"

#include "nn/linalg.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <cmath>

namespace attn::nn {

namespace {

void expect_same_width(const Mat& Q, const Mat& K, const char* what) {
    if (Q.shape(1) != K.shape(1))
        throw ShapeError(std::string(what) + ": queries " + shape_string(shape_of(Q)) + " and keys " +
                         shape_string(shape_of(K)) + " must have the same width");
}

}  // namespace

Mat dot_scores(const Mat& Q, const Mat& K) {
    expect_same_width(Q, K, "dot scores Q K^T");
    return matmul(Q, xt::eval(xt::transpose(K)), "Q K^T");
}

Mat general_scores(const Mat& Q, const Mat& W, const Mat& K) {
    expect_shape("general score weight W", W, {Q.shape(1), K.shape(1)});
    return matmul(matmul(Q, W, "Q W"), xt::eval(xt::transpose(K)), "(Q W) K^T");
}

Mat scaled_dot_scores(const Mat& Q, const Mat& K) {
    // Dividing by sqrt(d) keeps the variance of q.k near 1 for unit-variance entries,
    // so the softmax does not saturate as d grows.
    return dot_scores(Q, K) / std::sqrt(static_cast<double>(K.shape(1)));
}

Mat additive_scores(const Mat& Q, const Mat& K, const Mat& W_q, const Mat& W_k, const Vec& v) {
    const std::size_t d_a = v.size();
    expect_shape("additive score weight W_q", W_q, {d_a, Q.shape(1)});
    expect_shape("additive score weight W_k", W_k, {d_a, K.shape(1)});
    // 1. project every query and every key once
    const Mat projected_q = matmul(Q, xt::eval(xt::transpose(W_q)), "Q W_q^T");
    const Mat projected_k = matmul(K, xt::eval(xt::transpose(W_k)), "K W_k^T");
    // 2. each pair: v . tanh(W_q q_i + W_k k_j)
    Mat scores = xt::empty<double>({Q.shape(0), K.shape(0)});
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j) {
            double e = 0.0;
            for (std::size_t a = 0; a < d_a; ++a) e += v(a) * std::tanh(projected_q(i, a) + projected_k(j, a));
            scores(i, j) = e;
        }
    return scores;
}

Mat concat_scores(const Mat& Q, const Mat& K, const Mat& W, const Vec& v) {
    const std::size_t d_q = Q.shape(1), d_k = K.shape(1);
    expect_shape("concat score weight W", W, {v.size(), d_q + d_k});
    Mat scores = xt::empty<double>({Q.shape(0), K.shape(0)});
    Vec joined = xt::empty<double>({d_q + d_k});
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j) {
            xt::view(joined, xt::range(0, d_q)) = xt::row(Q, static_cast<std::ptrdiff_t>(i));
            xt::view(joined, xt::range(d_q, d_q + d_k)) = xt::row(K, static_cast<std::ptrdiff_t>(j));
            double e = 0.0;
            for (std::size_t a = 0; a < v.size(); ++a) {
                double pre = 0.0;
                for (std::size_t b = 0; b < d_q + d_k; ++b) pre += W(a, b) * joined(b);
                e += v(a) * std::tanh(pre);
            }
            scores(i, j) = e;
        }
    return scores;
}

}  // namespace attn::nn
