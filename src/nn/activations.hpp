// The nonlinearities of the course, entry by entry, through the project's own tanh and exp
// (core/portable_math.hpp) rather than libm's, whose last bit depends on the processor.
#pragma once

#include "core/portable_math.hpp"
#include "core/tensor.hpp"

#include <xtensor/xeval.hpp>

namespace attn::nn {

// tanh of every entry of a vector or matrix (or an expression of them), evaluated.
template <class E>
auto tanh_each(const xt::xexpression<E>& x) {
    auto out = xt::eval(x.derived_cast());
    for (auto& v : out) v = portable::tanh(v);
    return out;
}

// sigmoid(x) = 1 / (1 + e^{-x}) of every entry.
template <class E>
auto sigmoid(const xt::xexpression<E>& x) {
    auto out = xt::eval(x.derived_cast());
    for (auto& v : out) v = portable::sigmoid(v);
    return out;
}

}  // namespace attn::nn
