// The dot, general and scaled dot scores (the equations are in nn/scores.hpp).
// The classroom exercise dot-scores; the student's version is lessons/exercises/dot_scores.cpp.
#include "nn/scores.hpp"

#include "nn/linalg.hpp"

#include <xtensor/xmanipulation.hpp>

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

}  // namespace attn::nn
