// The softmax of a vector and of each row of a matrix (see nn/softmax.hpp).
// The classroom exercise softmax; the student's version is lessons/exercises/softmax.cpp.
// The row itself is nn/reference/softmax_row.hpp (vectorised: this file compiles at -O3).
// n = entries of a vector, T_q x T_k = rows x columns.
#include "nn/softmax.hpp"

#include "nn/kernels.hpp"
#include "nn/reference/softmax_row.hpp"

namespace attn::nn {

Vec softmax(const Vec& logits) {
    Vec out = xt::empty<double>({logits.size()});
    softmax_row(logits.data(), out.data(), logits.size());
    return out;
}

Mat softmax_rows(const Mat& logits) {
    const std::size_t rows = logits.shape(0), cols = logits.shape(1);
    Mat out = xt::empty<double>({rows, cols});
    // each row is a distribution of its own, so rows can go to different threads
    for_each_row(rows, cols,
                 [&](std::size_t r) { softmax_row(logits.data() + r * cols, out.data() + r * cols, cols); });
    return out;
}

}  // namespace attn::nn
