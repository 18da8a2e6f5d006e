// Exercise layer-norm: layer normalisation (Ba et al. 2016, eqs. 3-4), row by row.
// Checked by lesson 11 (transformer-block), step [layer-norm]: mu, sigma2, x_hat and Y must match
// the golden file, and x_hat's variance must be sigma^2 / (sigma^2 + eps) with the biased sigma^2.
//
// Task: for X (T x d), the gain g and bias b (d each) and eps, fill a LayerNormResult (declared in
// src/nn/layer_norm.hpp) row by row, for each row t:
//
//   mu_t       = (1/d) sum_j x_tj
//   sigma_t^2  = (1/d) sum_j (x_tj - mu_t)^2          (biased: divide by d, not d - 1)
//   r_t        = 1 / sqrt(sigma_t^2 + eps)             (eps inside the square root)
//   x^_tj      = (x_tj - mu_t) r_t                      (normalized)
//   y_tj       = g_j x^_tj + b_j                        (output)
//
// and mean(t) = mu_t, variance(t) = sigma_t^2, inv_std(t) = r_t. A row is one token: normalise
// along the row, over its d features, never down a column.
//
// Then: meson compile -C build attn-student && build/attn-student check layer-norm
#include "nn/layer_norm.hpp"

#include "exercises/not_done.hpp"

#include <cmath>

namespace attn::nn {

LayerNormResult layer_norm([[maybe_unused]] const Mat& X, [[maybe_unused]] const Vec& gain,
                           [[maybe_unused]] const Vec& bias, [[maybe_unused]] double eps) {
    throw ExerciseNotDone("layer-norm");
}

}  // namespace attn::nn
