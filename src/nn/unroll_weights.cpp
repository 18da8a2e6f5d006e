// The weights of the unrolled update-gate recurrence (the closed form is in nn/unroll.hpp).
// The classroom exercise unrolled-weights; the student's version is lessons/exercises/unrolled_weights.cpp.
// The two wrong closed forms that lesson 5 shows stay in unroll.cpp.
// T = time steps, d = state width; steps t and i count from 1, row t - 1 of the gates is u_t.
#include "nn/unroll.hpp"

namespace attn::nn {

namespace {

// prod_{j=from..to} u_j of feature k; 1 when from > to (the empty product).
double carried(const Mat& gates, std::size_t k, std::size_t from, std::size_t to) {
    double product = 1.0;
    for (std::size_t j = from; j <= to; ++j) product *= gates(j - 1, k);
    return product;
}

}  // namespace

Tensor3 unrolled_weights(const Mat& gates) {
    const std::size_t T = gates.shape(0), d = gates.shape(1);
    Tensor3 a = xt::zeros<double>({d, T, T + 1});
    for (std::size_t k = 0; k < d; ++k)
        for (std::size_t t = 1; t <= T; ++t) {
            // h_0 was carried through every step; h~_i was written by step i and carried by i+1 .. t
            a(k, t - 1, 0) = carried(gates, k, 1, t);
            for (std::size_t i = 1; i <= t; ++i) a(k, t - 1, i) = (1.0 - gates(i - 1, k)) * carried(gates, k, i + 1, t);
        }
    return a;
}

}  // namespace attn::nn
