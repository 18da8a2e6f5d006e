// Context vectors, c_i = sum_j alpha_ij h_j — Bahdanau et al. 2015, eq. 5 (see nn/attention.hpp).
// The classroom exercise context; the student's version is lessons/exercises/context.cpp.
#include "nn/attention.hpp"

#include "nn/linalg.hpp"

#include <string>

namespace attn::nn {

Mat context_vectors(const Mat& weights, const Mat& values) {
    if (weights.shape(1) != values.shape(0))
        throw ShapeError("context A H: weights " + shape_string(shape_of(weights)) + " need " +
                         std::to_string(weights.shape(1)) + " value rows, got " + shape_string(shape_of(values)));
    return matmul(weights, values, "A H");
}

}  // namespace attn::nn
