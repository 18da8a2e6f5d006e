// Central finite differences: the independent measure every analytic gradient of the course is
// checked against (lesson 8 and tests/test_backward.cpp). h = the step; the error of a central
// difference shrinks like h^2 until rounding, about eps |L| / h, takes over.
#pragma once

#include "core/tensor.hpp"

#include <algorithm>
#include <cmath>

namespace attn::nn {

// (L(x + h) - L(x - h)) / ((x + h) - (x - h)) for one number x that loss() reads, moved in place
// and restored. Divided by the step actually taken, which is exact: x + h rounds, and dividing by
// 2h would count that rounding as error.
template <class Loss>
double central_difference(double& x, const Loss& loss, double h) {
    const double saved = x, up = saved + h, down = saved - h;
    x = up;
    const double loss_up = loss();
    x = down;
    const double loss_down = loss();
    x = saved;
    return (loss_up - loss_down) / (up - down);
}

// dL/dx entry by entry by central differences with step h (x is perturbed in place and restored).
template <class Tensor, class Loss>
Tensor central_differences(Tensor& x, const Loss& loss, double h) {
    Tensor numeric = xt::zeros<double>(x.shape());
    for (std::size_t k = 0; k < x.size(); ++k) numeric.data()[k] = central_difference(x.data()[k], loss, h);
    return numeric;
}

// The worst |analytic - numeric| / max(1, |numeric|) over all entries (NaN if any entry is NaN).
template <class Tensor>
double gradient_error(const Tensor& analytic, const Tensor& numeric) {
    expect_shape("finite-difference gradient", numeric, shape_of(analytic));
    double worst = 0.0;
    for (std::size_t k = 0; k < analytic.size(); ++k) {
        const double a = analytic.data()[k], n = numeric.data()[k];
        const double error = std::abs(a - n) / std::max(1.0, std::abs(n));
        if (std::isnan(error)) return error;
        worst = std::max(worst, error);
    }
    return worst;
}

}  // namespace attn::nn
