// The causal and padding masks, 0 where a query may look and -inf where it may not (see
// nn/self_attention.hpp; Vaswani et al. 2017, section 3.2.3).
// The classroom exercise causal-mask; the student's version is lessons/exercises/causal_mask.cpp.
// T = positions, T_q = queries, T_k = keys.
#include "nn/self_attention.hpp"

#include <limits>
#include <string>

namespace attn::nn {

namespace {

const double minus_inf = -std::numeric_limits<double>::infinity();

}  // namespace

Mat causal_mask(std::size_t T) {
    Mat mask = xt::zeros<double>({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = i + 1; j < T; ++j) mask(i, j) = minus_inf;
    return mask;
}

Mat padding_mask(std::size_t T_q, std::size_t T_k, std::size_t valid_keys) {
    if (valid_keys > T_k)
        throw ShapeError("padding mask: " + std::to_string(valid_keys) + " valid keys out of " + std::to_string(T_k));
    Mat mask = xt::zeros<double>({T_q, T_k});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = valid_keys; j < T_k; ++j) mask(i, j) = minus_inf;
    return mask;
}

Mat padding_mask(std::size_t T_q, std::size_t T_k, std::size_t valid_queries, std::size_t valid_keys) {
    if (valid_queries > T_q)
        throw ShapeError("padding mask: " + std::to_string(valid_queries) + " valid queries out of " +
                         std::to_string(T_q));
    Mat mask = padding_mask(T_q, T_k, valid_keys);
    for (std::size_t i = valid_queries; i < T_q; ++i)
        for (std::size_t j = 0; j < T_k; ++j) mask(i, j) = minus_inf;
    return mask;
}

}  // namespace attn::nn
