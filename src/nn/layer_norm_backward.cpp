// The backward pass of layer normalisation (see nn/layer_norm.hpp).
// The classroom exercise layer-norm-backward; the student's version is
// lessons/exercises/layer_norm_backward.cpp. T = rows (tokens), d = width of a row.
#include "nn/layer_norm.hpp"

namespace attn::nn {

LayerNormGrads layer_norm_backward(const LayerNormResult& forward, const Vec& gain, const Mat& dY) {
    const std::size_t T = forward.normalized.shape(0), d = forward.normalized.shape(1);
    expect_shape("layer norm backward gain g", gain, {d});
    expect_shape("layer norm backward dL/dY", dY, {T, d});
    LayerNormGrads g{xt::empty<double>({T, d}), xt::zeros<double>({d}), xt::zeros<double>({d}),
                     xt::empty<double>({T, d})};
    const double width = static_cast<double>(d);
    for (std::size_t t = 0; t < T; ++t) {
        // 1. through the gain: dx^ = dy * g; g and b collect their share from every row
        double mean_dn = 0.0, mean_dn_n = 0.0;
        for (std::size_t j = 0; j < d; ++j) {
            const double n = forward.normalized(t, j), dn = dY(t, j) * gain(j);
            g.dnormalized(t, j) = dn;
            g.dgain(j) += dY(t, j) * n;
            g.dbias(j) += dY(t, j);
            mean_dn += dn;
            mean_dn_n += dn * n;
        }
        mean_dn /= width, mean_dn_n /= width;
        // 2. x^ = (x - mu) r: the direct path r dx^, the mean's -r mean(dx^), the variance's
        // -r x^ mean(dx^ x^) (dr/dx_j = -r^3 (x_j - mu) / d)
        const double r = forward.inv_std(t);
        for (std::size_t j = 0; j < d; ++j)
            g.dX(t, j) = r * (g.dnormalized(t, j) - mean_dn - forward.normalized(t, j) * mean_dn_n);
    }
    return g;
}

}  // namespace attn::nn
