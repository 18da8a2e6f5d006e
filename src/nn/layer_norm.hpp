// Layer normalisation and its backward pass (Ba et al. 2016): every row of a matrix (one token's
// vector) centred by its own mean and scaled by its own standard deviation, then given a learned
// gain and bias. T = rows (tokens), d = width of a row.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// The learned part of one layer norm, and its epsilon (inside the square root).
struct LayerNormParams {
    Vec gain;            // d, g; 1 at initialisation
    Vec bias;            // d, b; 0 at initialisation
    double eps = 1e-5;   // keeps 1 / sqrt(var + eps) finite for a constant row (PyTorch's default)
};

// Everything one layer norm computes, so that a lesson can show each stage and the backward pass
// can reuse it.
struct LayerNormResult {
    Vec mean;         // T, mu_t = (1/d) sum_j x_tj
    Vec variance;     // T, sigma_t^2 = (1/d) sum_j (x_tj - mu_t)^2   (biased: 1/d, not 1/(d-1))
    Vec inv_std;      // T, r_t = 1 / sqrt(sigma_t^2 + eps)
    Mat normalized;   // T x d, x^_tj = (x_tj - mu_t) r_t
    Mat output;       // T x d, y_tj = g_j x^_tj + b_j
};

// y_t = g * (x_t - mu_t) / sqrt(sigma_t^2 + eps) + b, row by row   — Ba et al. 2016, eqs. 3-4
// (statistics over the units of one layer, for one example: here one token's d features).
// X: T x d, gain and bias: d. The sums run along each row in the order of j.
// The classroom exercise layer-norm (src/nn/layer_norm.cpp).
LayerNormResult layer_norm(const Mat& X, const Vec& gain, const Vec& bias, double eps);

// The gradients of a layer norm.
struct LayerNormGrads {
    Mat dX;           // T x d
    Vec dgain;        // d, sum_t dY_tj x^_tj
    Vec dbias;        // d, sum_t dY_tj
    Mat dnormalized;  // T x d, dx^ = dY * g
};

// dx^ = dy * g,  dx = r (dx^ - mean_j(dx^) - x^ mean_j(dx^ * x^)),  row by row — the chain rule
// through x^ = (x - mu) r, where mu and sigma^2 depend on every x_j of the row: the mean's path
// gives -mean(dx^), the variance's path -x^ mean(dx^ * x^). Two identities follow: each row of dX
// sums to 0 (sum_j x^_j = 0), and dx . x^ = r (dx^ . x^) eps / (sigma^2 + eps), 0 only without eps.
// `forward` is what layer_norm returned; dY: T x d.
// The classroom exercise layer-norm-backward (src/nn/layer_norm_backward.cpp).
LayerNormGrads layer_norm_backward(const LayerNormResult& forward, const Vec& gain, const Mat& dY);

}  // namespace attn::nn
