// Layer normalisation, row by row (see nn/layer_norm.hpp).
// The classroom exercise layer-norm; the student's version is lessons/exercises/layer_norm.cpp.
// T = rows (tokens), d = width of a row.
#include "nn/layer_norm.hpp"

#include <cmath>

namespace attn::nn {

LayerNormResult layer_norm(const Mat& X, const Vec& gain, const Vec& bias, double eps) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    expect_shape("layer norm gain g", gain, {d});
    expect_shape("layer norm bias b", bias, {d});
    LayerNormResult r{xt::empty<double>({T}), xt::empty<double>({T}), xt::empty<double>({T}),
                      xt::empty<double>({T, d}), xt::empty<double>({T, d})};
    const double width = static_cast<double>(d);
    for (std::size_t t = 0; t < T; ++t) {
        // 1. the row's mean, 2. its biased variance (1/d: the statistics of these d numbers
        // themselves, not an estimate of a population's), 3. eps inside the root, 4. gain and bias
        double sum = 0.0;
        for (std::size_t j = 0; j < d; ++j) sum += X(t, j);
        const double mu = sum / width;
        double squares = 0.0;
        for (std::size_t j = 0; j < d; ++j) squares += (X(t, j) - mu) * (X(t, j) - mu);
        const double variance = squares / width, inv_std = 1.0 / std::sqrt(variance + eps);
        r.mean(t) = mu, r.variance(t) = variance, r.inv_std(t) = inv_std;
        for (std::size_t j = 0; j < d; ++j) {
            r.normalized(t, j) = (X(t, j) - mu) * inv_std;
            r.output(t, j) = gain(j) * r.normalized(t, j) + bias(j);
        }
    }
    return r;
}

}  // namespace attn::nn
