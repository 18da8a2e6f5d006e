// Exercise layer-norm-backward: the backward pass of layer normalisation.
// Checked by lesson 11 (transformer-block), step [layer-norm-backward]: dx_hat, dX, dg and db must
// match the golden file, central differences and the two identities of the Jacobian.
//
// Task: given what layer_norm returned (`forward`: x^ = normalized, r = inv_std, ...), the gain g
// and dY = dL/dY (T x d), fill a LayerNormGrads (declared in src/nn/layer_norm.hpp). Row by row:
//
//   dx^_j  = dy_j g_j                                            (dnormalized)
//   dx_j   = r (dx^_j - mean_k(dx^_k) - x^_j mean_k(dx^_k x^_k))  (dX)
//
// and, summed over the rows t, dg_j = sum_t dy_tj x^_tj and db_j = sum_t dy_tj. The middle term
// is the mean's path: mu depends on every x_k of the row (dmu/dx_k = 1/d); the last is the
// variance's (dr/dx_k = -r^3 (x_k - mu) / d).
//
// Then: meson compile -C build attn-student && build/attn-student check layer-norm-backward
#include "nn/layer_norm.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

LayerNormGrads layer_norm_backward([[maybe_unused]] const LayerNormResult& forward, [[maybe_unused]] const Vec& gain,
                                   [[maybe_unused]] const Mat& dY) {
    throw ExerciseNotDone("layer-norm-backward");
}

}  // namespace attn::nn
