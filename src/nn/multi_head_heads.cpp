// Splitting a T x d_model matrix into h heads and merging them back (see nn/multi_head.hpp).
// The classroom exercise heads; the student's version is lessons/exercises/heads.cpp.
// h = heads, T = rows, d_model = model width, d_k = d_model / h.
#include "nn/multi_head.hpp"

#include <algorithm>

namespace attn::nn {

Heads split_heads(const Mat& X, std::size_t heads) {
    const std::size_t T = X.shape(0), d_model = X.shape(1), d_k = head_width(d_model, heads);
    Heads out = xt::empty<double>({heads, T, d_k});
    for (std::size_t i = 0; i < heads; ++i)
        for (std::size_t t = 0; t < T; ++t) {
            const double* from = X.data() + t * d_model + i * d_k;
            std::copy(from, from + d_k, out.data() + (i * T + t) * d_k);
        }
    return out;
}

Mat merge_heads(const Heads& heads) {
    const std::size_t h = heads.shape(0), T = heads.shape(1), d_v = heads.shape(2);
    Mat out = xt::empty<double>({T, h * d_v});
    for (std::size_t i = 0; i < h; ++i)
        for (std::size_t t = 0; t < T; ++t) {
            const double* from = heads.data() + (i * T + t) * d_v;
            std::copy(from, from + d_v, out.data() + t * h * d_v + i * d_v);
        }
    return out;
}

}  // namespace attn::nn
