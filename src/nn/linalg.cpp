#include "nn/linalg.hpp"

#include <xtensor-blas/xlinalg.hpp>

namespace attn::nn {

Mat matmul(const Mat& A, const Mat& B, const char* what) {
    if (A.shape(1) != B.shape(0))
        throw ShapeError(std::string(what) + ": cannot multiply " + shape_string(shape_of(A)) + " by " +
                         shape_string(shape_of(B)));
    return xt::linalg::dot(A, B);
}

}  // namespace attn::nn
